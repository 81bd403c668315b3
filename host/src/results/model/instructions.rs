//! What the server tells a model about itself when a session starts
//! (`initialize`'s `instructions`).

use crate::policy::{Mode, Root};

/// What the server tells a model about itself (`instructions`): what the
/// tools are, and the roots they work in, named, with their modes, so the
/// model knows where relative paths go and what it may change.
pub fn instructions(roots: &[Root]) -> String {
    let Some(first) = roots.first() else {
        return "File tools sandboxed in WebAssembly. No roots are configured, so tools that use files see none."
            .into();
    };
    let named: Vec<String> = roots
        .iter()
        .map(|root| {
            let mode = match root.mode {
                Mode::ReadOnly => "read-only",
                Mode::ReadWrite => "read-write",
            };
            format!("{} ({mode})", root.path)
        })
        .collect();
    format!(
        "File tools sandboxed in WebAssembly. Roots: {}. Relative paths are taken from the first root, {}; \
         absolute paths must be inside a root.",
        named.join(", "),
        first.path
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instructions_name_the_roots_with_their_modes() {
        let roots = [
            Root { path: "/work/src".into(), mode: Mode::ReadWrite },
            Root { path: "/work/docs".into(), mode: Mode::ReadOnly },
        ];
        let said = instructions(&roots);
        assert!(said.contains("Roots: /work/src (read-write), /work/docs (read-only)."), "{said}");
        assert!(said.contains("taken from the first root, /work/src;"), "{said}");
        assert!(instructions(&[]).contains("No roots are configured"));
    }
}
