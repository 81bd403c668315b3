//! `cordon audit verify FILE...`: checks an audit trail's chain.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::audit::verify::verify;

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check the chain of audit files given oldest first (audit.log.2 audit.log.1 audit.log);
    /// exit 1 naming the first line that breaks it.
    Verify {
        /// The audit files, oldest first.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

impl AuditCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            AuditCommand::Verify { files } => {
                let files: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
                match verify(&files) {
                    Ok(v) => {
                        let start = match v.from_genesis {
                            true => "from the first line ever written".to_string(),
                            false => format!("from seq {}: the lines before it are in files not given", v.first_seq),
                        };
                        println!("ok: {} lines, seq {}–{}, chained {start}", v.lines, v.first_seq, v.last_seq);
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
