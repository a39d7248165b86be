//! The library's threads in this process, by name (Linux: /proc). All are named `mcpc-...`;
//! the test harness's own threads come and go and are left out.

/// The names of this process's library threads, sorted.
pub fn library_threads() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|comm| comm.trim().to_owned())
        .filter(|name| name.starts_with("mcpc-"))
        .collect();
    names.sort();
    names
}

/// How many library threads bear one of `names`.
pub fn threads_named_any(names: &[&str]) -> usize {
    library_threads()
        .iter()
        .filter(|name| names.contains(&name.as_str()))
        .count()
}

/// Waits (up to `settle`) until the library holds at most `bound` threads (idle pool threads
/// end a while after their last work); returns the count then.
pub fn settled_threads(settle: std::time::Duration, bound: usize) -> usize {
    let deadline = std::time::Instant::now() + settle;
    loop {
        let now = library_threads().len();
        if now <= bound || std::time::Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
