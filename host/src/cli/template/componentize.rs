//! `cordon tool new NAME --lang python|js`: a project that componentize-py or
//! componentize-js builds into a component, needing no Cordon checkout: the
//! tool's source (a working tool to change), `wit/` with Cordon's contract as
//! this binary carries it (for Python also the project's world and the WASI
//! packages it imports), a `build.sh` that installs the pinned build tool into
//! the project and builds `NAME.wasm` there, a README and a `.gitignore`. The
//! pins and the WASI packages are the example tools' (`tools/examples/python`,
//! `tools/examples/javascript`), packed by the build script
//! (`build/projects.rs`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

use super::{Lang, Project, vendored};

/// What the build script takes from the example tools: `PYTHON_WIT_DEPS`,
/// `COMPONENTIZE_PY_VERSION`, `JS_PACKAGE` and `JS_LOCK`.
mod packed {
    include!(concat!(env!("OUT_DIR"), "/project_files.rs"));
}

/// A template: (path in the project, text with `{{…}}` holes, whether it is a
/// program to run).
type Template = (&'static str, &'static str, bool);

/// The Python project's templates.
const PYTHON: [Template; 5] = [
    ("app.py", include_str!("python/app.py.in"), false),
    ("wit/world.wit", include_str!("python/world.wit.in"), false),
    ("build.sh", include_str!("python/build.sh.in"), true),
    ("README.md", include_str!("python/README.md.in"), false),
    (".gitignore", include_str!("python/gitignore.in"), false),
];

/// The JavaScript project's templates.
const JS: [Template; 4] = [
    ("app.js", include_str!("js/app.js.in"), false),
    ("build.sh", include_str!("js/build.sh.in"), true),
    ("README.md", include_str!("js/README.md.in"), false),
    (".gitignore", include_str!("js/gitignore.in"), false),
];

/// Where Cordon's `tool.wit` goes in a Python project: among the dependencies
/// of the project's own WIT package (its world).
const PYTHON_CONTRACT: &str = "wit/deps/cordon/tool.wit";
/// Where Cordon's `tool.wit` goes in a JavaScript project: it is the one WIT
/// package componentize-js reads (world `cordon-tool`).
const JS_CONTRACT: &str = "wit/tool.wit";

/// WIT's keywords, which a name in WIT may not be without a `%`.
const WIT_KEYWORDS: &[&str] = &[
    "_",
    "as",
    "async",
    "bool",
    "borrow",
    "char",
    "constructor",
    "enum",
    "error-context",
    "export",
    "f32",
    "f64",
    "flags",
    "float32",
    "float64",
    "from",
    "func",
    "future",
    "import",
    "include",
    "interface",
    "list",
    "map",
    "own",
    "package",
    "record",
    "resource",
    "result",
    "s16",
    "s32",
    "s64",
    "s8",
    "static",
    "stream",
    "string",
    "tuple",
    "type",
    "u16",
    "u32",
    "u64",
    "u8",
    "use",
    "variant",
    "with",
    "world",
    "option",
];

/// Writes the `lang` project for the tool `name` (already checked) into `dir`.
pub fn create(name: &str, lang: Lang, dir: PathBuf) -> anyhow::Result<ExitCode> {
    let files = files(name, lang)?;
    let project = Project::open(dir)?;
    for (path, bytes, executable) in &files {
        match executable {
            true => project.write_executable(Path::new(path), bytes)?,
            false => project.write(Path::new(path), bytes)?,
        }
    }
    let (language, extra) = match lang {
        Lang::Python => ("Python", " --grant ro:DIR --stub-sockets"),
        _ => ("JavaScript", ""),
    };
    let dir = project.dir.display();
    println!("created the {language} tool project `{name}` in {dir}");
    println!("next: cd {dir} && ./build.sh");
    println!("then: cordon tool add {name}.wasm{extra}");
    Ok(ExitCode::SUCCESS)
}

/// Every file of the `lang` project for `name`: (path, bytes, whether it is a
/// program to run).
fn files(name: &str, lang: Lang) -> anyhow::Result<Vec<(String, Vec<u8>, bool)>> {
    let holes = Holes::new(name)?;
    let (templates, contract): (&[Template], &str) = match lang {
        Lang::Python => (&PYTHON, PYTHON_CONTRACT),
        _ => (&JS, JS_CONTRACT),
    };
    let mut files: Vec<(String, Vec<u8>, bool)> = templates
        .iter()
        .map(|(path, text, executable)| (path.to_string(), holes.fill(text).into_bytes(), *executable))
        .collect();
    files.push((contract.to_string(), contract_wit().to_vec(), false));
    match lang {
        Lang::Python => {
            for (path, bytes) in packed::PYTHON_WIT_DEPS {
                files.push((format!("wit/deps/{path}"), bytes.to_vec(), false));
            }
        }
        _ => {
            let (package, lock) = npm_files(name)?;
            files.push(("package.json".into(), package.into_bytes(), false));
            files.push(("package-lock.json".into(), lock.into_bytes(), false));
        }
    }
    Ok(files)
}

/// Cordon's `wit/tool.wit`, as the SDK packs it.
fn contract_wit() -> &'static [u8] {
    let found = vendored::SDK_FILES.iter().find(|(path, _)| *path == "wit/tool.wit");
    found.expect("the build script packs wit/tool.wit").1
}

/// What fills the templates' holes.
struct Holes<'a> {
    /// `{{name}}`: the tool's name.
    name: &'a str,
    /// `{{wit_package}}`: the Python project's WIT package (`local:LABEL`).
    wit_package: String,
    /// `{{wit_world}}`: the Python project's world (`LABEL`).
    wit_world: String,
    /// `{{npm_name}}`: the JavaScript project's npm package name.
    npm_name: String,
    /// `{{componentize_js}}`: the componentize-js version the project pins
    /// (`{{componentize_py}}` is the packed `COMPONENTIZE_PY_VERSION`).
    componentize_js: String,
}

impl<'a> Holes<'a> {
    /// The holes' values for the tool `name`.
    fn new(name: &'a str) -> anyhow::Result<Holes<'a>> {
        let label = wit_label(name);
        let example: Value = serde_json::from_str(packed::JS_PACKAGE).context("the packed package.json")?;
        let componentize_js = example["dependencies"]["@bytecodealliance/componentize-js"]
            .as_str()
            .context("the JavaScript example pins @bytecodealliance/componentize-js")?
            .to_string();
        Ok(Holes {
            name,
            wit_package: format!("local:{label}"),
            wit_world: label,
            npm_name: npm_name(name),
            componentize_js,
        })
    }

    /// `text` with every hole filled.
    fn fill(&self, text: &str) -> String {
        text.replace("{{name}}", self.name)
            .replace("{{wit_package}}", &self.wit_package)
            .replace("{{wit_world}}", &self.wit_world)
            .replace("{{npm_name}}", &self.npm_name)
            .replace("{{componentize_py}}", packed::COMPONENTIZE_PY_VERSION)
            .replace("{{componentize_js}}", &self.componentize_js)
    }
}

/// A WIT name for the tool `name` (1-64 of `[a-z0-9_-]`): its runs of letters
/// and digits as kebab-case words, a word that starts with a digit joined to
/// the word before it (the first one put after `tool`), with `-tool` after a
/// name that would be a keyword.
fn wit_label(name: &str) -> String {
    let mut label = String::new();
    for word in name.split(['-', '_']).filter(|word| !word.is_empty()) {
        match word.starts_with(|c: char| c.is_ascii_digit()) {
            true if label.is_empty() => label.push_str("tool"),
            true => {}
            false if label.is_empty() => {}
            false => label.push('-'),
        }
        label.push_str(word);
    }
    if label.is_empty() {
        label.push_str("tool");
    }
    if WIT_KEYWORDS.contains(&label.as_str()) {
        label.push_str("-tool");
    }
    label
}

/// The npm package name of the tool `name`: npm refuses names that start with
/// `_` and those of Node's own modules, so every tool's is prefixed alike.
fn npm_name(name: &str) -> String {
    format!("cordon-tool-{name}")
}

/// The JavaScript project's `package.json` and `package-lock.json` for the
/// tool `name`: the example's pins under the project's own npm name.
fn npm_files(name: &str) -> anyhow::Result<(String, String)> {
    let npm_name = npm_name(name);
    let example: Value = serde_json::from_str(packed::JS_PACKAGE).context("the packed package.json")?;
    let dependencies = &example["dependencies"];
    let package = json!({
        "name": npm_name,
        "version": "0.1.0",
        "description": format!("A Cordon tool: {name}."),
        "private": true,
        "type": "module",
        "scripts": { "build": "./build.sh" },
        "dependencies": dependencies,
    });
    let mut lock: Value = serde_json::from_str(packed::JS_LOCK).context("the packed package-lock.json")?;
    lock["name"] = json!(npm_name);
    lock["version"] = "0.1.0".into();
    lock["packages"][""] = json!({ "name": npm_name, "version": "0.1.0", "dependencies": dependencies });
    let text = |value: &Value| serde_json::to_string_pretty(value).map(|text| text + "\n");
    Ok((text(&package)?, text(&lock)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of the file at `path` among `files`.
    fn file<'a>(files: &'a [(String, Vec<u8>, bool)], path: &str) -> &'a str {
        let found = files.iter().find(|(p, _, _)| p == path).unwrap_or_else(|| panic!("{path} is written"));
        std::str::from_utf8(&found.1).unwrap()
    }

    #[test]
    fn wit_names_are_valid_for_any_tool_name() {
        for (name, label) in [
            ("demo-x", "demo-x"),
            ("csv_rows", "csv-rows"),
            ("a__b-_c", "a-b-c"),
            ("2fa", "tool2fa"),
            ("v-2", "v2"),
            ("log_v2_x", "log-v2-x"),
            ("_", "tool"),
            ("_-_", "tool"),
            ("world", "world-tool"),
            ("error-context", "error-context-tool"),
            ("my-u8", "my-u8"),
        ] {
            assert_eq!(wit_label(name), label, "{name}");
        }
        // Every word starts with a letter: what any WIT parser takes.
        for name in ["9", "x-9-9", "_1_2", "a_-1"] {
            let label = wit_label(name);
            assert!(label.split('-').all(|w| w.starts_with(|c: char| c.is_ascii_lowercase())), "{name}: {label}");
        }
        assert_eq!(npm_name("_x"), "cordon-tool-_x");
    }

    #[test]
    fn a_python_project_has_its_world_the_contract_and_the_wasi_it_imports() {
        let files = files("demo_2", Lang::Python).unwrap();
        for (path, bytes, _) in &files {
            assert!(!String::from_utf8_lossy(bytes).contains("{{"), "{path} has an unfilled hole");
        }
        let world = file(&files, "wit/world.wit");
        assert!(world.contains("package local:demo2;") && world.contains("world demo2 {"), "{world}");
        assert!(file(&files, "build.sh").contains("-w local:demo2/demo2"));
        assert!(file(&files, "app.py").contains("NAME = \"demo_2\""));
        assert!(file(&files, PYTHON_CONTRACT).contains("package cordon:tool@0.1.0;"));
        // Every WASI package the world imports is there, at its version.
        for import in world.lines().filter_map(|l| l.trim().strip_prefix("import wasi:")) {
            let (package, rest) = import.split_once('/').unwrap();
            let version = rest.split_once('@').unwrap().1.trim_end_matches(';');
            let wit = file(&files, &format!("wit/deps/{package}/{package}.wit"));
            assert!(wit.starts_with(&format!("package wasi:{package}@{version};")), "{package}@{version}");
        }
        let build = file(&files, "build.sh");
        assert!(build.contains(&format!("COMPONENTIZE_PY_VERSION={}\n", packed::COMPONENTIZE_PY_VERSION)));
        let executable: Vec<&str> = files.iter().filter(|f| f.2).map(|f| f.0.as_str()).collect();
        assert_eq!(executable, ["build.sh"]);
    }

    #[test]
    fn a_javascript_project_pins_what_the_example_pins_under_its_own_name() {
        let files = files("demo-x", Lang::Js).unwrap();
        for (path, bytes, _) in &files {
            assert!(!String::from_utf8_lossy(bytes).contains("{{"), "{path} has an unfilled hole");
        }
        let example: Value = serde_json::from_str(packed::JS_PACKAGE).unwrap();
        let package: Value = serde_json::from_str(file(&files, "package.json")).unwrap();
        let lock: Value = serde_json::from_str(file(&files, "package-lock.json")).unwrap();
        assert_eq!(package["dependencies"], example["dependencies"]);
        assert_eq!((&package["name"], &lock["name"]), (&json!("cordon-tool-demo-x"), &json!("cordon-tool-demo-x")));
        assert_eq!(lock["packages"][""]["dependencies"], example["dependencies"]);
        let example_lock: Value = serde_json::from_str(packed::JS_LOCK).unwrap();
        let installed = |lock: &Value| lock["packages"].as_object().unwrap().len();
        assert_eq!(installed(&lock), installed(&example_lock), "the same packages are locked");
        let pinned = example["dependencies"]["@bytecodealliance/componentize-js"].as_str().unwrap();
        assert!(file(&files, "build.sh").contains(&format!("COMPONENTIZE_JS_VERSION={pinned}\n")));
        assert!(file(&files, "app.js").contains("const NAME = 'demo-x';"));
        assert!(file(&files, JS_CONTRACT).contains("world cordon-tool {"));
    }
}
