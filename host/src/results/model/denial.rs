//! What a model reads when a third-party tool is refused a path: what the
//! tool is granted and how to grant more. The tool only sees its preopens
//! and cannot know either.

use std::path::Path;

use crate::policy::DirSpec;
use crate::registry::{Origin, Tool};
use crate::runtime::CallFailure;
use crate::tool::ErrorCode;

/// `failure` with, when it is `tool`'s refusal of a path (`permission_denied`
/// from a tool that is not built in), what the tool is granted and how to
/// grant more; `lock` is the lockfile installed tools' grants are kept in.
pub fn explain_denial(tool: &Tool, lock: Option<&Path>, failure: CallFailure) -> CallFailure {
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
