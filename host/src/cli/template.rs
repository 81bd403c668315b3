//! `cordon tool new NAME`: a ready-to-build Rust tool crate on the Cordon SDK,
//! from the template in `template/` (a working tool that numbers the lines of
//! a file, with a unit test), for its author to change. The SDK comes inside
//! the binary and is vendored into the crate (`vendor/cordon/`, with the
//! lockfile Cordon was built with), so the crate builds with cargo and the
//! wasm target alone, wherever the binary was built or copied to.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::installed::lock::valid_name;

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

/// Where the vendored files go in the new crate, and its SDK there.
const VENDOR: &str = "vendor/cordon";
const VENDORED_SDK: &str = "vendor/cordon/tools/sdk";

/// Writes the crate for `name` into `dir` (default `./NAME`), which must not
/// exist or be empty, on the SDK vendored into it, or, when `sdk` names one
/// (the `tools/sdk` folder of a Cordon checkout), on that.
pub fn create(name: &str, dir: Option<PathBuf>, sdk: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if !valid_name(name) {
        anyhow::bail!("`{name}` cannot name a tool: use 1-64 of [a-z0-9_-], not starting with `-`");
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
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
    let handle = crate::ambient::create_dir_handle(&dir).with_context(|| format!("create {}", dir.display()))?;
    if handle.entries().context("read the new crate's directory")?.next().is_some() {
        anyhow::bail!("{} already exists and is not empty; choose another --dir", dir.display());
    }
    let sdk_text = match &sdk {
        Some(sdk) => sdk.to_str().context("the SDK's path must be valid UTF-8")?,
        None => VENDORED_SDK,
    };
    let write = |path: &Path, bytes: &[u8]| -> anyhow::Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            handle.create_dir_all(parent).with_context(|| format!("create {}", dir.join(parent).display()))?;
        }
        handle.write(path, bytes).with_context(|| format!("write {}", dir.join(path).display()))
    };
    for (path, text) in FILES {
        write(Path::new(path), fill(text, name, sdk_text, sdk.is_none()).as_bytes())?;
    }
    if sdk.is_none() {
        for (path, bytes) in vendored::SDK_FILES {
            write(&Path::new(VENDOR).join(path), bytes)?;
        }
        write(Path::new("Cargo.lock"), vendored::SDK_LOCK.as_bytes())?;
    }
    println!("created the tool crate `{name}` in {}", dir.display());
    println!("next: cd {} && cargo test && cargo build --release --target wasm32-wasip2", dir.display());
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
