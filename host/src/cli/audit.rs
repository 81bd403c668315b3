//! `cordon audit verify FILE...`: checks an audit trail's chain and anchor;
//! `cordon audit show FILE... [--who NAME] [--event E]`: prints its records,
//! those of one principal or one kind.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::audit::verify::{Anchoring, verify};

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check the chain of audit files given oldest first (audit.log.2 audit.log.1 audit.log)
    /// against the log's anchor; exit 1 naming the first line that breaks it, or the lines
    /// missing at its end or start.
    Verify {
        /// The audit files, oldest first.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The anchor to check them against [default: the last file's, e.g. audit.log.anchor].
        #[arg(long, value_name = "FILE", conflicts_with = "no_anchor")]
        anchor: Option<PathBuf>,
        /// Check the chain alone (a copy without its anchor, a log from before anchors):
        /// lines cut off the end or the start then go unnoticed.
        #[arg(long)]
        no_anchor: bool,
    },
    /// Print the records of audit files (oldest first), one JSON line each, as written.
    Show {
        /// The audit files, oldest first.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Only the records of this principal: an OAuth subject (`sub`) or a static token's name.
        #[arg(long, value_name = "NAME")]
        who: Option<String>,
        /// Only records of this event (`call`, `refused`, `start`, …).
        #[arg(long, value_name = "EVENT")]
        event: Option<String>,
    },
}

impl AuditCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            AuditCommand::Show { files, who, event } => {
                for file in &files {
                    let bytes = crate::ambient::read_file(file)
                        .map_err(|e| anyhow::anyhow!("{} cannot be read: {e}", file.display()))?;
                    for line in String::from_utf8_lossy(&bytes).lines() {
                        let record: serde_json::Value = serde_json::from_str(line)
                            .map_err(|e| anyhow::anyhow!("{} is not an audit log: {e}", file.display()))?;
                        if shown(&record, who.as_deref(), event.as_deref()) {
                            println!("{line}");
                        }
                    }
                }
                Ok(ExitCode::SUCCESS)
            }
            AuditCommand::Verify { files, anchor, no_anchor } => {
                let files: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
                let anchoring = match (&anchor, no_anchor) {
                    (_, true) => Anchoring::Off,
                    (Some(path), false) => Anchoring::File(path),
                    (None, false) => Anchoring::Beside,
                };
                match verify(&files, anchoring) {
                    Ok(v) => {
                        let start = match v.from_genesis {
                            true => "from the first line ever written".to_string(),
                            false if v.anchored => format!("from seq {}, the oldest line kept", v.first_seq),
                            false => format!("from seq {}: the lines before it are in files not given", v.first_seq),
                        };
                        let end = match v.anchored {
                            true => "to the anchor",
                            false => "(no anchor checked: lines cut off the end would go unnoticed)",
                        };
                        println!("ok: {} lines, seq {}–{}, chained {start} {end}", v.lines, v.first_seq, v.last_seq);
                        for note in &v.notes {
                            println!("note: {note}");
                        }
                        Ok(ExitCode::SUCCESS)
                    }
                    Err(broken) => {
                        println!("broken: {broken}");
                        Ok(ExitCode::from(1))
                    }
                }
            }
        }
    }
}

/// Whether `record` is one of `who`'s (its principal's subject or token
/// name) and of `event`, when they are given.
fn shown(record: &serde_json::Value, who: Option<&str>, event: Option<&str>) -> bool {
    let principal = &record["who"]["principal"];
    let named = |name: &str| principal["sub"] == name || principal["token"] == name;
    who.is_none_or(named) && event.is_none_or(|e| record["event"] == e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_are_shown_by_principal_and_event() {
        let call = json!({"event": "call", "who": {"principal": {"kind": "oauth", "sub": "alice"}}});
        let refused = json!({"event": "refused", "who": {"principal": {"kind": "token", "token": "ci"}}});
        let start = json!({"event": "start"});
        assert!(shown(&call, Some("alice"), None) && !shown(&refused, Some("alice"), None));
        assert!(shown(&refused, Some("ci"), Some("refused")) && !shown(&refused, Some("ci"), Some("call")));
        assert!(!shown(&start, Some("alice"), None) && shown(&start, None, None));
    }
}
