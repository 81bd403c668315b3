//! `cordon tool new NAME [--lang rust|python|js]`: a ready-to-build tool
//! project for its author to change. For Rust (the default) a crate on the
//! Cordon SDK, from the template in `template/` (a working tool that numbers
//! the lines of a file, with a unit test). The SDK comes inside the binary and
//! is vendored into the crate (`vendor/cordon/`, with the lockfile Cordon was
//! built with), so the crate builds with cargo and the wasm target alone,
//! wherever the binary was built or copied to. For Python and JavaScript a
//! project built with componentize-py or componentize-js (`componentize`).

mod componentize;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use cap_std::fs::Dir;

use crate::installed::lock::valid_name;

/// The language a new tool is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Lang {
    /// A Rust crate on the Cordon SDK (vendored), built with cargo.
    #[default]
    Rust,
    /// A Python app built with componentize-py.
    Python,
    /// A JavaScript module built with componentize-js.
    Js,
}

/// The template's files: (path in the new crate, text with `{{…}}` holes).
const FILES: [(&str, &str); 4] = [
    ("Cargo.toml", include_str!("template/Cargo.toml.in")),
    ("src/lib.rs", include_str!("template/lib.rs.in")),
    ("README.md", include_str!("template/README.md.in")),
    (".gitignore", include_str!("template/gitignore.in")),
];

/// The SDK, the contract and the WIT as vendored (`SDK_FILES`), and the
/// lockfile (`SDK_LOCK`), made by the build script (`build/sdk.rs`).
mod vendored {
    include!(concat!(env!("OUT_DIR"), "/sdk_files.rs"));
}

/// Where the vendored files go in the new crate.
const VENDOR: &str = "vendor/cordon";
/// The vendored SDK's folder in the new crate.
const VENDORED_SDK: &str = "vendor/cordon/tools/sdk";

/// Writes the project for the tool `name` in `lang` into `dir` (default
/// `./NAME`), which must not exist or be empty. A Rust crate is on the SDK
/// vendored into it or, when `sdk` names one (the `tools/sdk` folder of a
/// Cordon checkout), on that; other languages take no SDK.
pub fn create(name: &str, lang: Lang, dir: Option<PathBuf>, sdk: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if !valid_name(name) {
        anyhow::bail!("`{name}` cannot name a tool: use 1-64 of [a-z0-9_-], not starting with `-`");
    }
    refuse_sdk(lang, sdk.as_deref())?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    match lang {
        Lang::Rust => create_crate(name, dir, sdk),
        Lang::Python | Lang::Js => componentize::create(name, lang, dir),
    }
}

/// `--sdk` names the Rust SDK, which only a Rust crate uses.
fn refuse_sdk(lang: Lang, sdk: Option<&Path>) -> anyhow::Result<()> {
    let language = match lang {
        Lang::Rust => return Ok(()),
        Lang::Python => "Python",
        Lang::Js => "JavaScript",
    };
    match sdk {
        Some(sdk) => anyhow::bail!(
            "--sdk {} names the Cordon SDK for Rust, which a {language} tool does not use: drop --sdk \
             (a {language} project builds with Cordon's WIT, which `cordon tool new` writes into it)",
            sdk.display()
        ),
        None => Ok(()),
    }
}

/// A new project's directory, created empty or found empty.
struct Project {
    /// The directory as given.
    dir: PathBuf,
    /// The directory, opened.
    handle: Dir,
}

impl Project {
    /// Creates `dir` (and its parents), refusing one that exists and is not empty.
    fn open(dir: PathBuf) -> anyhow::Result<Project> {
        let handle = crate::ambient::create_dir_handle(&dir).with_context(|| format!("create {}", dir.display()))?;
        if handle.entries().context("read the new project's directory")?.next().is_some() {
            anyhow::bail!("{} already exists and is not empty; choose another --dir", dir.display());
        }
        Ok(Project { dir, handle })
    }

    /// Writes `bytes` to `path` in the project, creating its folders.
    fn write(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.handle
                .create_dir_all(parent)
                .with_context(|| format!("create {}", self.dir.join(parent).display()))?;
        }
        self.handle.write(path, bytes).with_context(|| format!("write {}", self.dir.join(path).display()))
    }

    /// Writes `bytes` to `path` as a program its owner may run (mode 0755).
    fn write_executable(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        use cap_std::fs::PermissionsExt;
        self.write(path, bytes)?;
        let mode = cap_std::fs::Permissions::from_mode(0o755);
        self.handle
            .set_permissions(path, mode)
            .with_context(|| format!("make {} executable", self.dir.join(path).display()))
    }
}

/// Writes the Rust crate for `name` into `dir`, on the SDK vendored into it or
/// on the checkout's `sdk`.
fn create_crate(name: &str, dir: PathBuf, sdk: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let sdk = match sdk {
        None => None,
        Some(sdk) => Some(
            crate::ambient::canonical_dir(&sdk)
                .ok()
                .filter(|(path, is_dir)| *is_dir && path.join("Cargo.toml").is_file())
                .map(|(path, _)| path)
                .with_context(|| {
                    format!("the Cordon SDK is not at {} (the tools/sdk folder of a Cordon checkout)", sdk.display())
                })?,
        ),
    };
    let project = Project::open(dir)?;
    let sdk_text = match &sdk {
        Some(sdk) => sdk.to_str().context("the SDK's path must be valid UTF-8")?,
        None => VENDORED_SDK,
    };
    for (path, text) in FILES {
        project.write(Path::new(path), fill(text, name, sdk_text, sdk.is_none()).as_bytes())?;
    }
    if sdk.is_none() {
        for (path, bytes) in vendored::SDK_FILES {
            project.write(&Path::new(VENDOR).join(path), bytes)?;
        }
        project.write(Path::new("Cargo.lock"), vendored::SDK_LOCK.as_bytes())?;
    }
    let dir = project.dir.display();
    println!("created the tool crate `{name}` in {dir}");
    println!("next: cd {dir} && cargo test && cargo build --release --target wasm32-wasip2");
    println!("then: cordon tool add target/wasm32-wasip2/release/{}.wasm --grant ro:DIR", name.replace('-', "_"));
    Ok(ExitCode::SUCCESS)
}

/// The template's text with its holes filled: the tool's name, the SDK's
/// path, and what the README says of the SDK (`vendored` or a checkout's).
fn fill(text: &str, name: &str, sdk: &str, vendored: bool) -> String {
    let note = match vendored {
        true => "The Cordon SDK is in `vendor/cordon/` (with the contract and its WIT), as the `cordon`\n\
                 binary that made this crate carries it, and `Cargo.lock` pins the versions Cordon was\n\
                 built with (cargo drops those this crate does not use on its first build)."
            .to_string(),
        false => format!("The Cordon SDK is the checkout's at `{sdk}`."),
    };
    text.replace("{{name}}", name)
        .replace("{{crate}}", &name.replace('-', "_"))
        .replace("{{sdk}}", sdk)
        .replace("{{sdk_note}}", &note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hole_is_filled() {
        for (path, text) in FILES {
            for vendored in [true, false] {
                let filled = fill(text, "my-tool", "/sdk", vendored);
                assert!(!filled.contains("{{"), "{path}: {filled}");
            }
        }
        assert!(fill(FILES[0].1, "my-tool", "/sdk", false).contains("path = \"/sdk\""));
        assert!(fill(FILES[2].1, "my-tool", VENDORED_SDK, true).contains("`vendor/cordon/`"));
    }

    #[test]
    fn sdk_is_refused_for_python_and_javascript_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let checkout_sdk = tmp.path().join("tools/sdk");
        for (lang, language) in [(Lang::Python, "Python"), (Lang::Js, "JavaScript")] {
            let dir = tmp.path().join(format!("{lang:?}"));
            let refused = create("demo-x", lang, Some(dir.clone()), Some(checkout_sdk.clone())).unwrap_err();
            let message = refused.to_string();
            assert!(message.starts_with("--sdk ") && message.contains(&format!("a {language} tool does not use")));
            assert!(message.contains("drop --sdk"), "{message}");
            assert!(!dir.exists(), "nothing is created");
        }
        assert!(refuse_sdk(Lang::Rust, Some(&checkout_sdk)).is_ok());
        assert!(refuse_sdk(Lang::Python, None).is_ok());
    }

    #[test]
    fn a_bad_name_is_refused_in_every_language() {
        let tmp = tempfile::tempdir().unwrap();
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            let dir = tmp.path().join(format!("{lang:?}"));
            let refused = create("Bad Name", lang, Some(dir.clone()), None).unwrap_err();
            assert!(refused.to_string().contains("cannot name a tool"), "{refused}");
            assert!(!dir.exists());
        }
    }

    #[test]
    fn a_project_is_written_with_a_runnable_build_script_and_never_over_another() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        create("demo", Lang::Python, Some(dir.clone()), None).unwrap();
        let mode = std::fs::metadata(dir.join("build.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "build.sh is executable: {mode:o}");
        assert_eq!(std::fs::metadata(dir.join("app.py")).unwrap().permissions().mode() & 0o111, 0);
        assert!(dir.join("wit/deps/cordon/tool.wit").is_file() && dir.join("wit/deps/io/io.wit").is_file());
        let again = create("demo", Lang::Js, Some(dir.clone()), None).unwrap_err();
        assert!(again.to_string().contains("not empty"), "{again}");
        assert!(!dir.join("app.js").exists());
    }

    #[test]
    fn the_vendored_sdk_stands_alone() {
        let file = |name: &str| {
            let found = vendored::SDK_FILES.iter().find(|(path, _)| *path == name);
            String::from_utf8(found.unwrap_or_else(|| panic!("{name} is vendored")).1.to_vec()).unwrap()
        };
        for manifest in ["tools/sdk/Cargo.toml", "contract/Cargo.toml"] {
            let text = file(manifest);
            assert!(!text.contains("workspace"), "{manifest} inherits nothing:\n{text}");
            assert!(text.contains(&format!("version = \"{}\"", env!("CARGO_PKG_VERSION"))), "{text}");
        }
        let sdk = file("tools/sdk/Cargo.toml");
        assert!(sdk.contains("path = \"../../contract\"") && sdk.contains("wit-bindgen"), "{sdk}");
        // The SDK finds the contract's WIT where its bindings say it is.
        assert!(file("tools/sdk/src/component.rs").contains("path: \"../../wit\""));
        assert!(file("wit/tool.wit").contains("package cordon:tool"));
        assert!(file("tools/sdk/src/lib.rs").contains("export_tool"));
        assert!(vendored::SDK_LOCK.contains("name = \"wit-bindgen\""));
    }
}
