//! No import circles in src: a module that names another (`crate::a::...`, `super::...`) must
//! not be named back by it, directly or around a longer circle (a -> b -> c -> a).
//!
//! Modules are compared with their siblings, at every level: `crate::auth::flow` naming
//! `crate::auth::tokens` is an edge between the siblings `flow` and `tokens` of `auth`;
//! `crate::auth::flow` naming `crate::transport::http::redact` is an edge between the top-level
//! modules `auth` and `transport`. A child naming its own parent (`super::Thing`) is no edge:
//! the parent declares the child. The sources are read as text: every path that starts with
//! `crate::` or `super::` outside comments and unit-test modules counts, in `use` or in code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles that are known and being broken elsewhere, each with why it is left here. A circle
/// found is excused when all its modules are in one of these; one of these with no circle
/// left inside fails the test too, so the list only shrinks.
const KNOWN: &[(&[&str], &str)] = &[];

/// A module's path below the crate root (`client::requests`), empty for the root.
type Module = Vec<String>;

fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text the module's own code is in: comments and its unit tests left out.
fn code(text: &str) -> String {
    let text = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at]);
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path named in `code` from `crate::` or `super::`, as absolute segments; a brace group
/// (`crate::a::{b, c::d}`) gives one path per member.
fn named_paths(module: &Module, code: &str) -> Vec<Module> {
    let mut paths = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            if at > 0 && is_ident(code[..at].chars().next_back().unwrap()) {
                continue; // `my_crate::`, not `crate::`
            }
            let mut base: Module = if start == "crate::" {
                Vec::new()
            } else {
                module[..module.len().saturating_sub(1)].to_vec()
            };
            let mut rest = &code[from..];
            // More `super::`s climb further.
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
            collect(base, rest, &mut paths);
        }
    }
    paths
}

/// The path at the start of `rest` below `base`, expanding one brace group.
fn collect(mut base: Module, mut rest: &str, paths: &mut Vec<Module>) {
    loop {
        let ident: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        if !ident.is_empty() {
            base.push(ident.clone());
            rest = &rest[ident.len()..];
            if let Some(after) = rest.strip_prefix("::") {
                rest = after;
                continue;
            }
            paths.push(base);
            return;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut member = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        collect(base.clone(), group[member..i].trim_start(), paths);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        collect(base.clone(), group[member..i].trim_start(), paths);
                        member = i + 1;
                    }
                    _ => {}
                }
            }
        }
        paths.push(base);
        return;
    }
}

/// The longest known module the path starts with.
fn target(modules: &BTreeSet<Module>, path: &Module) -> Module {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| modules.contains(m))
        .unwrap_or_default()
}

fn name(module: &[String]) -> String {
    module.join("::")
}

/// The circles: the strongly connected components of more than one module (Tarjan's).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Search<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut Search<'a>, node: &'a str) {
        let n = s.index.len();
        s.index.insert(node, n);
        s.low.insert(node, n);
        s.stack.push(node);
        for next in s.edges.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !s.index.contains_key(next) {
                visit(s, next);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.stack.contains(&next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let at = s.stack.iter().rposition(|&m| m == node).unwrap();
            let mut component: Vec<String> = s.stack.drain(at..).map(str::to_owned).collect();
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = Search {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !s.index.contains_key(node.as_str()) {
            visit(&mut s, node);
        }
    }
    s.found
}

#[test]
fn no_module_names_a_module_that_names_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(&src, f)).collect();
    assert!(modules.len() > 50, "found only {} modules", modules.len());

    // Sibling edges, each with the file that makes it (for the failure message).
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let code = code(&std::fs::read_to_string(file).unwrap());
        for path in named_paths(&module, &code) {
            let to = target(&modules, &path);
            let common = module.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == module.len() || common == to.len() {
                continue; // itself, a child, or an ancestor
            }
            let (from_sibling, to_sibling) = (name(&module[..=common]), name(&to[..=common]));
            edges
                .entry(from_sibling.clone())
                .or_default()
                .insert(to_sibling.clone());
            why.entry((from_sibling, to_sibling))
                .or_default()
                .insert(format!(
                    "{} names {}",
                    file.strip_prefix(&src).unwrap().display(),
                    name(&path)
                ));
        }
    }

    let found = circles(&edges);
    let excused = |circle: &Vec<String>| {
        KNOWN
            .iter()
            .any(|(members, _)| circle.iter().all(|m| members.contains(&m.as_str())))
    };
    let mut report = String::new();
    for circle in found.iter().filter(|c| !excused(c)) {
        report += &format!("circle: {}\n", circle.join(", "));
        for ((from, to), how) in &why {
            if circle.contains(from) && circle.contains(to) {
                for how in how {
                    report += &format!("  {from} -> {to}: {how}\n");
                }
            }
        }
    }
    for (members, _) in KNOWN {
        let inside = |c: &&Vec<String>| c.iter().all(|m| members.contains(&m.as_str()));
        if !found.iter().any(|c| inside(&c)) {
            report += &format!(
                "no circle is left among {}: take them off KNOWN\n",
                members.join(", ")
            );
        }
    }
    assert!(report.is_empty(), "\n{report}");
}
