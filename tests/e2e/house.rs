//! The house's shape: the host's top-level modules import one another without a
//! cycle (each layer knows only the layers below it), and no source file is
//! over 600 lines. Read from the sources, test code left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::workspace;

/// The longest a host source file may be, test code left out.
const MAX_LINES: usize = 600;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's code: everything before its tests, without comment lines.
fn code(source: &str) -> String {
    let before_tests = source.split("#[cfg(test)]").next().unwrap_or_default();
    before_tests.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The top-level modules each named in `crate::NAME` paths of `code`.
fn imports(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + "crate::".len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect()
        })
        .filter(|name: &String| !name.is_empty())
        .collect()
}

/// The host's top-level modules and whom each imports.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if ["main", "lib"].contains(&name.as_str()) {
            continue;
        }
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files)
        } else {
            files.push(path)
        }
        let uses = graph.entry(name.clone()).or_default();
        for file in files {
            uses.extend(imports(&code(&std::fs::read_to_string(file).unwrap())));
        }
        uses.remove(&name);
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    graph.values_mut().for_each(|uses| uses.retain(|m| modules.contains(m)));
    graph
}

/// A cycle through `graph`, if there is one: the modules on it, in order.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in &graph[module] {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_hosts_modules_import_each_other_without_a_cycle() {
    let graph = module_graph(&workspace().join("host/src"));
    assert!(graph.len() > 10, "the host's modules were not found: {graph:?}");
    let shown: Vec<String> = graph.iter().map(|(m, uses)| format!("{m} -> {uses:?}")).collect();
    if let Some(cycle) = find_cycle(&graph) {
        panic!("the host's modules import each other in a cycle: {}\n{}", cycle.join(" -> "), shown.join("\n"));
    }
}

#[test]
fn no_host_source_file_is_over_the_limit() {
    let mut files = Vec::new();
    rust_files(&workspace().join("host/src"), &mut files);
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, code(&std::fs::read_to_string(f).unwrap()).lines().count()))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(f, lines)| format!("{} ({lines} lines)", f.display()))
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

#[test]
fn the_check_finds_a_cycle_and_ignores_tests_and_comments() {
    let source = "use crate::a::X;\n// crate::c in a comment\nfn f() { crate::b::g() }\n#[cfg(test)]\nuse crate::d;";
    assert_eq!(imports(&code(source)), BTreeSet::from(["a".to_string(), "b".to_string()]));
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            g.entry(from.to_string()).or_default().insert(to.to_string());
            g.entry(to.to_string()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let cycle = find_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])).expect("a cycle");
    assert_eq!((cycle.first(), cycle.len()), (cycle.last(), 4), "{cycle:?}");
}
