//! A Jupyter notebook (nbformat 4) as a model reads it, as Claude Code's own
//! Read shows one: its cells in order, each with its type and source, and a
//! code cell's outputs: streams, results and errors as text (a traceback's
//! terminal colours taken out), an image or other rich output named with its
//! size, not shown. What does not fit the page is cut, with a note saying how
//! to read the rest.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A notebook's cells and outputs rendered as text for `path`, cut to
/// `limit` bytes; `None` when `json` is not a notebook (no `cells` list).
pub fn render(json: &[u8], path: &str, limit: usize) -> Option<String> {
    let notebook: Value = serde_json::from_slice(json).ok()?;
    let cells = notebook.get("cells")?.as_array()?;
    let language = notebook
        .pointer("/metadata/kernelspec/language")
        .or_else(|| notebook.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str);
    let plural = if cells.len() == 1 { "" } else { "s" };
    let mut out = format!("{path}: Jupyter notebook, {} cell{plural}", cells.len());
    if let Some(language) = language {
        let _ = write!(out, " ({language})");
    }
    out.push('\n');
    for (n, cell) in cells.iter().enumerate() {
        let Some(cell) = cell.as_object() else { continue };
        render_cell(&mut out, n + 1, cell);
    }
    Some(cut(out, limit))
}

/// One cell: `[cell N: type, In [k]]`, its source, then its outputs.
fn render_cell(out: &mut String, n: usize, cell: &Map<String, Value>) {
    let kind = cell.get("cell_type").and_then(Value::as_str).unwrap_or("cell");
    let _ = write!(out, "\n[cell {n}: {kind}");
    if let Some(count) = cell.get("execution_count").and_then(Value::as_u64) {
        let _ = write!(out, ", In [{count}]");
    }
    out.push_str("]\n");
    push_text(out, &joined(cell.get("source")));
    for output in cell.get("outputs").and_then(Value::as_array).into_iter().flatten() {
        let Some(output) = output.as_object() else { continue };
        render_output(out, output);
    }
}

/// One output of a code cell.
fn render_output(out: &mut String, output: &Map<String, Value>) {
    match output.get("output_type").and_then(Value::as_str) {
        Some("stream") => {
            let name = output.get("name").and_then(Value::as_str).unwrap_or("stdout");
            out.push_str(if name == "stderr" { "[stderr]\n" } else { "[output]\n" });
            push_text(out, &joined(output.get("text")));
        }
        Some("error") => {
            let field = |key| output.get(key).and_then(Value::as_str).unwrap_or_default();
            let _ = writeln!(out, "[error: {}: {}]", field("ename"), field("evalue"));
            let traceback: Vec<String> = output
                .get("traceback")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|l| joined(Some(l)))
                .collect();
            push_text(out, &strip_ansi(&traceback.join("\n")));
        }
        _ => {
            let Some(data) = output.get("data").and_then(Value::as_object) else { return };
            let shown = ["text/plain", "text/markdown"].into_iter().find(|kind| data.contains_key(*kind));
            if let Some(kind) = shown {
                out.push_str("[output]\n");
                push_text(out, &joined(data.get(kind)));
            }
            for (kind, value) in data.iter().filter(|(kind, _)| Some(kind.as_str()) != shown) {
                let bytes = joined(Some(value)).len();
                let _ = writeln!(out, "[{kind} output ({bytes} bytes in the notebook), not shown]");
            }
        }
    }
}

/// A notebook text field: a string, or a list of strings to join.
fn joined(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Appends `text`, ending it with a newline.
fn push_text(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
}

/// `text` without terminal escape sequences (`ESC [ … final byte`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.clone().next() == Some('[') {
            chars.next();
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// `text` cut to `limit` bytes on a character boundary, with a note saying
/// so and how to read the rest (when the note fits), when it is longer.
pub(super) fn cut(mut text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let note = format!(
        "\n[… cut here to fit the page ({} bytes in all): ask with a larger max_tokens, or read the file's \
         JSON with start_line/end_line or format \"json\"]\n",
        text.len()
    );
    // A page too small for twice the note gets the text alone.
    let note = if limit >= 2 * note.len() { note } else { String::new() };
    let mut end = limit - note.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&note);
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn notebook() -> Value {
        json!({
            "nbformat": 4,
            "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
            "cells": [
                {"cell_type": "markdown", "source": ["# Title\n", "Some *notes*."]},
                {"cell_type": "code", "execution_count": 2, "source": "print('hi')\n1 + 1", "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["hi\n"]},
                    {"output_type": "execute_result", "data": {"text/plain": ["2"]}}
                ]},
                {"cell_type": "code", "execution_count": 3, "source": "plot()", "outputs": [
                    {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
                    {"output_type": "error", "ename": "ValueError", "evalue": "bad",
                     "traceback": ["\u{1b}[0;31mValueError\u{1b}[0m: bad"]}
                ]}
            ]
        })
    }

    #[test]
    fn a_notebook_shows_its_cells_sources_and_outputs() {
        let shown = render(notebook().to_string().as_bytes(), "n.ipynb", 10_000).unwrap();
        assert_eq!(
            shown,
            "n.ipynb: Jupyter notebook, 3 cells (python)\n\
             \n[cell 1: markdown]\n# Title\nSome *notes*.\n\
             \n[cell 2: code, In [2]]\nprint('hi')\n1 + 1\n[output]\nhi\n[output]\n2\n\
             \n[cell 3: code, In [3]]\nplot()\n[output]\n<Figure>\n[image/png output (12 bytes in the notebook), not shown]\n\
             [error: ValueError: bad]\nValueError: bad\n"
        );
    }

    #[test]
    fn what_is_not_a_notebook_is_not_rendered_and_a_long_one_is_cut_with_a_note() {
        assert_eq!(render(b"{\"a\": 1}", "x.ipynb", 100), None);
        assert_eq!(render(b"not json", "x.ipynb", 100), None);
        let mut long = notebook();
        long["cells"][0]["source"] = "y".repeat(1000).into();
        let shown = render(long.to_string().as_bytes(), "n.ipynb", 400).unwrap();
        assert!(shown.len() <= 400 && shown.starts_with("n.ipynb: Jupyter"), "{shown}");
        assert!(shown.ends_with("format \"json\"]\n"), "{shown}");
    }
}
