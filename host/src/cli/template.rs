//! `cordon tool new NAME`: a ready-to-build Rust tool crate on the Cordon SDK,
//! from the template in `template/` (a working tool that numbers the lines of
//! a file, with a unit test), for its author to change.

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

/// The SDK of the checkout this binary was built from.
const BUILT_WITH_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/sdk");

/// Writes the crate for `name` into `dir` (default `./NAME`), which must not
/// exist or be empty, depending on the SDK at `sdk`.
pub fn create(name: &str, dir: Option<PathBuf>, sdk: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if !valid_name(name) {
        anyhow::bail!("`{name}` cannot name a tool: use 1-64 of [a-z0-9_-], not starting with `-`");
    }
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let sdk = sdk.unwrap_or_else(|| PathBuf::from(BUILT_WITH_SDK));
    let sdk = crate::ambient::canonical_dir(&sdk)
        .ok()
        .filter(|(path, is_dir)| *is_dir && path.join("Cargo.toml").is_file())
        .map(|(path, _)| path)
        .with_context(|| {
            format!(
                "the Cordon SDK is not at {}; pass --sdk DIR (the tools/sdk folder of a Cordon checkout)",
                sdk.display()
            )
        })?;
    let handle = crate::ambient::create_dir_handle(&dir).with_context(|| format!("create {}", dir.display()))?;
    if handle.entries().context("read the new crate's directory")?.next().is_some() {
        anyhow::bail!("{} already exists and is not empty; choose another --dir", dir.display());
    }
    let sdk_text = sdk.to_str().context("the SDK's path must be valid UTF-8")?;
    for (path, text) in FILES {
        let text = fill(text, name, sdk_text);
        if let Some(parent) = Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
            handle.create_dir_all(parent).with_context(|| format!("create {}", dir.join(parent).display()))?;
        }
        handle.write(path, text).with_context(|| format!("write {}", dir.join(path).display()))?;
    }
    println!("created the tool crate `{name}` in {}", dir.display());
    println!("next: cd {} && cargo test && cargo build --release --target wasm32-wasip2", dir.display());
    println!("then: cordon tool add target/wasm32-wasip2/release/{}.wasm --grant ro:DIR", name.replace('-', "_"));
    Ok(ExitCode::SUCCESS)
}

/// The template's text with its holes filled.
fn fill(text: &str, name: &str, sdk: &str) -> String {
    text.replace("{{name}}", name).replace("{{crate}}", &name.replace('-', "_")).replace("{{sdk}}", sdk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hole_is_filled() {
        for (path, text) in FILES {
            let filled = fill(text, "my-tool", "/sdk");
            assert!(
                !filled.contains("{{name}}") && !filled.contains("{{crate}}") && !filled.contains("{{sdk}}"),
                "{path}"
            );
        }
        assert!(fill(FILES[0].1, "my-tool", "/sdk").contains("path = \"/sdk\""));
    }
}
