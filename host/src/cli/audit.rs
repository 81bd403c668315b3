//! `cordon audit verify FILE...`: checks an audit trail's chain and anchor.

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
}

impl AuditCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
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
