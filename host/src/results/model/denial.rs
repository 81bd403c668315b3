//! What a model reads when a third-party tool is refused a path or a
//! request: what the tool is granted and how to grant more. The tool only sees
//! its preopens, or wasi:http's bare error code, and cannot know either.

use std::path::Path;

use crate::policy::DirSpec;
use crate::registry::{Origin, Tool};
use crate::runtime::{CallFailure, Refusal};
use crate::tool::ErrorCode;

/// `failure` with, when it is `tool`'s refusal of a path (`permission_denied`
/// from a tool that is not built in), what the tool is granted and how to
/// grant more; `lock` is the lockfile installed tools' grants are kept in.
/// When the host refused some of the call's HTTP requests (`refused`), a
/// tool's error says which, and why, whatever its code.
pub fn explain_denial(tool: &Tool, lock: Option<&Path>, failure: CallFailure, refused: &[Refusal]) -> CallFailure {
    let failure = match failure {
        CallFailure::Tool(mut e) if !refused.is_empty() => {
            let why: Vec<String> = refused.iter().map(|r| format!("the host refused {r}")).collect();
            e.message = format!("{} ({})", e.message.trim_end_matches('.'), why.join("; "));
            return CallFailure::Tool(e);
        }
        other => other,
    };
    let granted = match &tool.origin {
        Origin::Builtin => return failure,
        Origin::Component(path) => format!(
            "`{}` was loaded with `--component {}`, which grants no directories; install it with `cordon tool \
             add {} --grant ro:DIR` (or rw:DIR) instead",
            tool.manifest.name,
            path.display(),
            path.display()
        ),
        Origin::Installed { grants, .. } => {
            let list = match grants.is_empty() {
                true => "no directories".to_string(),
                false => grants.iter().map(DirSpec::to_string).collect::<Vec<_>>().join(", "),
            };
            format!(
                "the installed tool `{}` is granted {list} (in {}); a path outside its grants needs one: `cordon \
                 tool add COMPONENT.wasm --grant ro:DIR` (or rw:DIR), repeating its other grants",
                tool.manifest.name,
                lock.unwrap_or(Path::new("the lockfile")).display()
            )
        }
    };
    match failure {
        CallFailure::Tool(mut e) if e.code == ErrorCode::PermissionDenied => {
            e.message = format!("{} ({granted})", e.message.trim_end_matches('.'));
            CallFailure::Tool(e)
        }
        other => other,
    }
}
