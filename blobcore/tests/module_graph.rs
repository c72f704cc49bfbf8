//! The core crate's top-level modules depend only downward: no module of
//! blobcore/src reaches, through `crate::` paths (the crate root's
//! re-exports included: `crate::Blob` is `blob`), a module that reaches it
//! back. Code under `#[cfg(test)] mod tests` and comments do not count.
//! python/tests/test_module_graph.py checks the binding crate the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let p = entry.expect("a folder entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The text without line comments and without the unit-test module at the
/// end of the file.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines().map(|l| l.find("//").map_or(l, |at| &l[..at])).collect::<Vec<_>>().join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first segment of every path `crate::` reaches in `code`, a brace
/// group (`use crate::{a::X, b, Y}`) giving one per item.
fn reached(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Items at depth 0 of the group.
            let (mut depth, mut start) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.push(ident_at(group[start..i].trim()).to_string());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident_at(group[start..i].trim()).to_string());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.push(ident_at(rest).to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Names the crate root re-exports (`pub use module::{A, B}`), each to its
/// module.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in code(lib).lines() {
        let Some(path) = line.trim().strip_prefix("pub use ") else { continue };
        let module = ident_at(path).to_string();
        let tail = path.trim_end_matches(';');
        let items: Vec<&str> = match tail.find('{') {
            Some(at) => tail[at + 1..].trim_end_matches('}').split(',').collect(),
            None => vec![tail.rsplit("::").next().unwrap_or("")],
        };
        for item in items {
            let name = item.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() && name != module {
                names.insert(name.to_string(), module.clone());
            }
        }
    }
    names
}

fn graph() -> Graph {
    let root = src();
    let lib = std::fs::read_to_string(root.join("lib.rs")).expect("lib.rs");
    let names = root_names(&lib);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut g = Graph::new();
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix(&root).ok()?.components().next()?.as_os_str().to_str().map(|s| s.trim_end_matches(".rs").to_string()))
        .filter(|m| m != "lib")
        .collect();
    for f in &files {
        let rel = f.strip_prefix(&root).expect("under src");
        let top = rel.components().next().and_then(|c| c.as_os_str().to_str()).expect("a name").trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable source");
        let deps = g.entry(top.clone()).or_default();
        for seg in reached(&code(&text)) {
            let m = names.get(&seg).cloned().unwrap_or(seg);
            if m != top && modules.contains(&m) {
                deps.insert(m);
            }
        }
    }
    g
}

/// A list of modules forming a circle, or None.
fn find_circle(g: &Graph) -> Option<Vec<String>> {
    fn visit(m: &str, g: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let (mut path, mut done) = (Vec::new(), BTreeSet::new());
    g.keys().find_map(|m| visit(m, g, &mut path, &mut done))
}

#[test]
fn core_modules_have_no_import_circles() {
    let g = graph();
    assert!(g.len() >= 20, "found only {} modules", g.len());
    // The graph sees plain paths, groups and root re-exports.
    assert!(g["index"].contains("blob") && g["index"].contains("placement"), "{:?}", g["index"]);
    assert!(g["export"].contains("storage") && g["dlpack"].contains("export"));
    if let Some(c) = find_circle(&g) {
        panic!("import circle: {}", c.join(" -> "));
    }
}

#[test]
fn the_check_finds_a_circle() {
    let mut g = graph();
    g.get_mut("shape").expect("shape").insert("blob".into()); // blob reaches shape: now a circle
    assert!(find_circle(&g).is_some());
}

#[test]
fn paths_groups_and_root_names_are_read() {
    let got = reached("use crate::{a::X, b, c::{D, E}};\nlet x = crate::f::g(); crate::Blob::new()");
    assert_eq!(got, ["a", "b", "c", "f", "Blob"]);
    let names = root_names("pub use blob::Blob;\npub use layout::{is_row_major, Layout};\npub mod shape;");
    assert_eq!(names.get("Blob").map(String::as_str), Some("blob"));
    assert_eq!(names.get("Layout").map(String::as_str), Some("layout"));
    assert_eq!(code("a // crate::x\n#[cfg(test)]\nmod tests { crate::y }"), "a ");
}
