//! The report: Markdown tables with their context, the machine and versions,
//! errors; printed as it grows and written to a file at the end.

use std::fmt::Write as _;

/// One table of results.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// The section heading (`grep`, `Start-up`, …).
    pub title: String,
    /// Sentences before the table: what was measured and how.
    pub intro: Vec<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Sentences after it: skipped contenders, failures, caveats.
    pub notes: Vec<String>,
}

impl Table {
    pub fn new(title: &str, header: &[&str]) -> Table {
        Table { title: title.into(), header: header.iter().map(|h| h.to_string()).collect(), ..Table::default() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn markdown(&self) -> String {
        let mut out = format!("## {}\n\n", self.title);
        for line in &self.intro {
            let _ = writeln!(out, "{line}");
        }
        if !self.intro.is_empty() {
            out.push('\n');
        }
        if !self.rows.is_empty() {
            let _ = writeln!(out, "| {} |", self.header.join(" | "));
            // The first column is text; the others are numbers, right-aligned.
            let align: Vec<&str> = (0..self.header.len()).map(|i| if i == 0 { "---" } else { "---:" }).collect();
            let _ = writeln!(out, "|{}|", align.join("|"));
            for row in &self.rows {
                let mut cells = row.clone();
                cells.resize(self.header.len(), String::new());
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
            out.push('\n');
        }
        for note in &self.notes {
            let _ = writeln!(out, "- {note}");
        }
        if !self.notes.is_empty() {
            out.push('\n');
        }
        out
    }
}

/// The whole report.
#[derive(Debug, Default)]
pub struct Report {
    /// Lines under the title: date, mode, machine, versions, load.
    pub preamble: Vec<String>,
    pub tables: Vec<Table>,
    /// What went wrong (the harness then exits non-zero).
    pub errors: Vec<String>,
}

impl Report {
    /// Adds a finished table and prints it.
    pub fn push(&mut self, table: Table) {
        println!("{}", table.markdown());
        self.tables.push(table);
    }

    /// Records an error and prints it.
    pub fn error(&mut self, section: &str, error: impl std::fmt::Display) {
        let text = format!("{section}: {error:#}");
        eprintln!("cordon-bench: ERROR {text}");
        self.errors.push(text);
    }

    pub fn markdown(&self) -> String {
        let mut out = String::from("# Cordon benchmarks\n\n");
        for line in &self.preamble {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
        for table in &self.tables {
            out.push_str(&table.markdown());
        }
        out.push_str("## Errors\n\n");
        if self.errors.is_empty() {
            out.push_str("None.\n");
        } else {
            for error in &self.errors {
                let _ = writeln!(out, "- {error}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_markdown() {
        let mut table = Table::new("grep", &["pattern", "Cordon", "rg"]);
        table.intro.push("Median of 5.".into());
        table.row(vec!["`fn `".into(), "0.4 s".into(), "0.1 s".into()]);
        table.notes.push("fd: not found".into());
        let text = table.markdown();
        assert!(text.starts_with("## grep\n\nMedian of 5.\n\n| pattern | Cordon | rg |\n|---|---:|---:|\n"));
        assert!(text.contains("| `fn ` | 0.4 s | 0.1 s |\n"));
        assert!(text.ends_with("- fd: not found\n\n"));
        let report = Report { preamble: vec!["Run of today.".into()], tables: vec![table], errors: vec![] };
        assert!(report.markdown().contains("## Errors\n\nNone.\n"));
    }
}
