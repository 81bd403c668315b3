//! The house's shape: the top-level modules of the host, and of the tools'
//! SDK, import one another without a cycle (each layer knows only the layers
//! below it), and no Rust source file of the host, the tests, the tools (the
//! SDK among them) or the benchmark is over 600 lines. Read from the sources,
//! test code left out. The rules read from the host's syntax are in `syntax`.

mod syntax;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::workspace;

/// The longest a source file may be, test code left out.
const MAX_LINES: usize = 600;

/// Where the limit holds: every `.rs` file under these folders of the workspace.
const LIMITED: [&str; 4] = ["host/src", "tests", "tools", "bench/src"];

/// Every `.rs` file under `dir`, build output (`target/`) left out.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's code: everything before its tests (a `#[cfg(test)]` that starts a
/// line; an indented one marks one item, not the rest of the file), without
/// comment lines.
fn code(source: &str) -> String {
    source
        .lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The items of a `{...}` group, up to its closing brace, split at its own commas.
fn group_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..at]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// The first name of each `crate::` path of `code` (`crate::a::X` and
/// `crate::{a, B}` name `a`, and `a` and `B`): a module, or an item of the
/// crate's root.
fn imports(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let path = &code[at + "crate::".len()..];
        let firsts = match path.strip_prefix('{') {
            Some(group) => group_items(group),
            None => vec![path],
        };
        for first in firsts {
            let name: String =
                first.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// What the crate's root re-exports (`pub use tool::{Context, Tool};`), each
/// name with the module it comes from: `crate::Tool` is an import of `tool`.
fn reexports(root: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in root.split(';') {
        let Some(at) = statement.find("pub use ") else { continue };
        let path = statement[at + "pub use ".len()..].trim().trim_start_matches("crate::");
        let Some((module, rest)) = path.split_once("::") else { continue };
        let items = match rest.trim_start().strip_prefix('{') {
            Some(group) => group_items(group),
            None => vec![rest],
        };
        for item in items {
            let name = item.rsplit(" as ").next().unwrap_or_default().rsplit("::").next().unwrap_or_default().trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.to_string());
            }
        }
    }
    names
}

/// Whether `path`, under `src`, is a test module: a `tests.rs` (declared
/// `#[cfg(test)] mod tests;`) or a file under a `tests/` folder.
fn is_test_module(path: &Path, src: &Path) -> bool {
    path.strip_prefix(src).unwrap_or(path).iter().any(|part| part == "tests" || part == "tests.rs")
}

/// A crate's top-level modules (under `src`) and whom each imports, through
/// `crate::` paths and the root's re-exports. Test modules (`tests.rs`,
/// `tests/`) are left out, like the code after `#[cfg(test)]`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut root = String::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if ["main", "lib"].contains(&name.as_str()) {
            root.push_str(&code(&std::fs::read_to_string(&path).unwrap()));
            continue;
        }
        if is_test_module(&path, src) {
            continue;
        }
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files)
        } else {
            files.push(path)
        }
        let uses = graph.entry(name.clone()).or_default();
        for file in files.iter().filter(|f| !is_test_module(f, src)) {
            uses.extend(imports(&code(&std::fs::read_to_string(file).unwrap())));
        }
    }
    let reexported = reexports(&root);
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (name, uses) in graph.iter_mut() {
        let named = std::mem::take(uses);
        let resolved =
            named.into_iter().filter_map(|n| if modules.contains(&n) { Some(n) } else { reexported.get(&n).cloned() });
        *uses = resolved.filter(|m| m != name && modules.contains(m)).collect();
    }
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

/// Fails with the cycle and the whole graph if `graph` has a cycle.
fn assert_no_cycle(whose: &str, graph: &BTreeMap<String, BTreeSet<String>>) {
    let shown: Vec<String> = graph.iter().map(|(m, uses)| format!("{m} -> {uses:?}")).collect();
    if let Some(cycle) = find_cycle(graph) {
        panic!("{whose} modules import each other in a cycle: {}\n{}", cycle.join(" -> "), shown.join("\n"));
    }
}

#[test]
fn the_hosts_modules_import_each_other_without_a_cycle() {
    let graph = module_graph(&workspace().join("host/src"));
    assert!(graph.len() > 10, "the host's modules were not found: {graph:?}");
    assert_no_cycle("the host's", &graph);
}

#[test]
fn the_sdks_modules_import_each_other_without_a_cycle() {
    let graph = module_graph(&workspace().join("tools/sdk/src"));
    assert!(graph.len() > 5, "the SDK's modules were not found: {graph:?}");
    assert_no_cycle("the SDK's", &graph);
}

#[test]
fn no_source_file_is_over_the_limit() {
    let mut long = Vec::new();
    for dir in LIMITED {
        let mut files = Vec::new();
        rust_files(&workspace().join(dir), &mut files);
        assert!(!files.is_empty(), "no Rust sources under {dir}");
        long.extend(
            files
                .iter()
                .map(|f| (f, code(&std::fs::read_to_string(f).unwrap()).lines().count()))
                .filter(|(_, lines)| *lines > MAX_LINES)
                .map(|(f, lines)| format!("{} ({lines} lines)", f.display())),
        );
    }
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

#[test]
fn the_check_reads_groups_reexports_and_one_item_for_tests_and_leaves_test_modules_out() {
    let source =
        "use crate::{a, b::{X, Y}, Root};\nimpl S {\n    #[cfg(test)]\n    fn t() {}\n    fn f() { crate::c::g() }\n}";
    let names = ["Root", "a", "b", "c"].map(String::from);
    assert_eq!(imports(&code(source)), BTreeSet::from(names));
    let root = "pub use tool::{Context, Tool as Trait};\npub use other::deep::Thing;\npub use external::{X};";
    let exported = [("Context", "tool"), ("Thing", "other"), ("Trait", "tool"), ("X", "external")];
    assert_eq!(reexports(root), exported.map(|(n, m)| (n.to_string(), m.to_string())).into());
    // A crate: `a` names `b`'s re-exported item, `b` names `a` only in its tests.
    let src = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        std::fs::create_dir_all(src.path().join(path).parent().unwrap()).unwrap();
        std::fs::write(src.path().join(path), text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\npub use b::Thing;\n");
    write("a.rs", "use crate::{Thing, Missing};\n");
    write("b/mod.rs", "pub struct Thing;\n#[cfg(test)]\nmod tests;\n");
    write("b/tests.rs", "use crate::a;\n");
    write("tests/more.rs", "use crate::a;\n");
    let graph = module_graph(src.path());
    let expected = [("a", vec!["b"]), ("b", vec![])];
    let expected = expected.map(|(m, uses)| (m.to_string(), uses.into_iter().map(String::from).collect()));
    assert_eq!(graph, BTreeMap::from(expected));
}
