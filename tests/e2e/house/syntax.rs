//! The host's rules read from its syntax (parsed with `syn`, test modules
//! left out): no function takes more than [`MAX_PARAMS`] parameters (`self`
//! included; more travel together in a struct that says so), and JSON-RPC
//! error objects are made only by the fault table (`results/faults/`) and,
//! outside the host crate, the JSON-RPC core (the `cordon-protocol` crate),
//! so that every fault reaches the wire by one road.

use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

use super::rust_files;
use crate::support::workspace;

/// The most parameters a host function takes, `self` included.
const MAX_PARAMS: usize = 5;

/// Where error objects may be made, under host/src.
const MAKE_ERRORS: [&str; 1] = ["results/faults"];

/// What one file breaks.
#[derive(Default)]
struct Findings {
    /// Functions with more than `MAX_PARAMS` parameters: name and count.
    wide: Vec<(String, usize)>,
    /// Places an `ErrorObject` is made: the function it is made in.
    errors: Vec<String>,
    /// The function being read.
    within: String,
}

impl<'ast> Visit<'ast> for Findings {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test(&module.attrs) {
            visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            self.within = item.sig.ident.to_string();
            visit::visit_item_fn(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            self.within = item.sig.ident.to_string();
            visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_signature(&mut self, signature: &'ast syn::Signature) {
        if signature.inputs.len() > MAX_PARAMS {
            self.wide.push((signature.ident.to_string(), signature.inputs.len()));
        }
        visit::visit_signature(self, signature);
    }

    fn visit_expr_path(&mut self, expr: &'ast syn::ExprPath) {
        let names: Vec<String> = expr.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if names.ends_with(&["ErrorObject".to_string(), "new".to_string()]) {
            self.errors.push(self.within.clone());
        }
        visit::visit_expr_path(self, expr);
    }

    fn visit_expr_struct(&mut self, expr: &'ast syn::ExprStruct) {
        if expr.path.segments.last().is_some_and(|s| s.ident == "ErrorObject") {
            self.errors.push(self.within.clone());
        }
        visit::visit_expr_struct(self, expr);
    }
}

/// Whether `attrs` mark test code: `#[test]` or `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|arg| arg == "test"))
    })
}

/// What `source` breaks.
fn findings(source: &str) -> Findings {
    let file = syn::parse_file(source).expect("the source parses");
    let mut findings = Findings::default();
    findings.visit_file(&file);
    findings
}

/// The host's source files, each with what it breaks, named relative to host/src.
fn host_findings() -> Vec<(PathBuf, Findings)> {
    let src = workspace().join("host/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "the host's sources were not found under {}", src.display());
    files
        .into_iter()
        .map(|path| {
            let found = findings(&std::fs::read_to_string(&path).unwrap());
            (path.strip_prefix(&src).unwrap().to_path_buf(), found)
        })
        .collect()
}

/// Whether `file` (relative to host/src) may make error objects.
fn makes_errors(file: &Path) -> bool {
    MAKE_ERRORS.iter().any(|dir| file.starts_with(dir))
}

#[test]
fn no_host_function_takes_more_than_five_parameters() {
    let wide: Vec<String> = host_findings()
        .iter()
        .flat_map(|(file, found)| found.wide.iter().map(move |(name, n)| format!("{}: {name} ({n})", file.display())))
        .collect();
    assert!(wide.is_empty(), "functions with more than {MAX_PARAMS} parameters: {wide:?}");
}

#[test]
fn error_objects_are_made_in_the_host_only_by_the_fault_table() {
    let found = host_findings();
    let makers: Vec<&PathBuf> = found.iter().filter(|(_, f)| !f.errors.is_empty()).map(|(p, _)| p).collect();
    assert!(makers.iter().any(|p| p.starts_with("results/faults")), "the check found no error object made: {makers:?}");
    let elsewhere: Vec<String> = found
        .iter()
        .filter(|(file, _)| !makes_errors(file))
        .flat_map(|(file, f)| f.errors.iter().map(move |within| format!("{}: in {within}", file.display())))
        .collect();
    assert!(elsewhere.is_empty(), "error objects made outside {MAKE_ERRORS:?}: {elsewhere:?}");
}

#[test]
fn the_syntax_check_counts_parameters_and_finds_error_objects_outside_tests() {
    let source = "impl S {\n    fn f(&self, a: u8, b: u8, c: u8, d: u8, e: u8) {}\n    fn g(a: u8) -> E { \
                  ErrorObject::new(1, \"x\") }\n}\nfn h(a: u8, b: u8, c: u8, d: u8, e: u8) { let _ = \
                  jsonrpc::ErrorObject { code: 1 }; }\n#[cfg(test)]\nmod tests {\n    fn t(a: u8, b: u8, c: u8, d: \
                  u8, e: u8, f: u8) { ErrorObject::new(2, \"y\"); }\n}\n";
    let found = findings(source);
    assert_eq!(found.wide, vec![("f".to_string(), 6)], "self counts; five is the most; tests are left out");
    assert_eq!(found.errors, vec!["g", "h"], "a call of `new` and a struct literal, not in tests");
}
