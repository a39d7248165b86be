//! The processes of this machine as /proc shows them (Linux): who is in a process group.
#![cfg(target_os = "linux")]

/// Each process's id and its `stat` fields after the command name (state, ppid, pgrp, ...).
fn processes() -> Vec<(u32, Vec<String>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The command name is in parentheses and may hold anything: split after the last one.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        found.push((pid, rest.split_whitespace().map(str::to_owned).collect()));
    }
    found
}

/// The processes of process group `pgid` that have not exited (zombies have: they only wait
/// for their parent to read their status), with their state letters.
pub fn live_members(pgid: u32) -> Vec<(u32, String)> {
    let pgid = pgid.to_string();
    processes()
        .into_iter()
        .filter(|(_, fields)| {
            fields.get(2) == Some(&pgid) && !matches!(fields[0].as_str(), "Z" | "X")
        })
        .map(|(pid, fields)| (pid, fields[0].clone()))
        .collect()
}
