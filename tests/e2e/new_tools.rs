//! `cordon tool new NAME --lang python|js`: a project made by the binary alone,
//! away from the checkout, that builds with its own `build.sh`, installs, and
//! pages exactly, also when every page reopens the tool at its cursor.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{Fixture, Server, next_cursor, payload as payload_of, read_all, workspace};
use crate::tools::{cordon_on_path, example, ok, serve, tool_cmd};

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().map(Result::unwrap) {
            let path = entry.path();
            match path.is_dir() {
                true => pending.push(path),
                false => found.push(path.strip_prefix(dir).unwrap().to_str().unwrap().to_string()),
            }
        }
    }
    found.sort();
    found
}

/// Runs `cordon tool new demo-x --lang LANG` in an empty directory with the
/// binary copied out of the checkout, checks that it wrote `expected` (and
/// that none of it names the checkout), then runs the project's `build.sh` with
/// the build tool named by `tool_env` and returns the component it printed.
fn built_project(fx: &Fixture, lang: &str, expected: &[&str], tool_env: (&str, PathBuf)) -> PathBuf {
    let path = cordon_on_path(fx);
    let work = fx.dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut new = Command::new("cordon");
    new.env("PATH", &path).current_dir(&work).args(["tool", "new", "demo-x", "--lang", lang]);
    let said = ok(&new.output().unwrap());
    assert!(said.contains("tool project `demo-x` in demo-x") && said.contains("./build.sh"), "{said}");
    let project = work.join("demo-x");
    assert_eq!(files_under(&project), expected);
    let checkout = workspace().display().to_string();
    for file in expected {
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(!text.contains(&checkout), "{file} names the checkout {checkout}");
    }

    let (var, tool) = tool_env;
    assert!(tool.exists(), "{var}: {} is installed by the example's build", tool.display());
    let build = Command::new(project.join("build.sh"))
        .current_dir(&work)
        .env(var, &tool)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let component = PathBuf::from(ok(&build).trim());
    assert_eq!(component, project.join("demo-x.wasm"), "build.sh prints the component's path alone");
    assert!(component.is_file());
    let left = files_under(&project);
    assert_eq!(left.len(), expected.len() + 1, "the build leaves only the component behind: {left:?}");
    component
}

/// Pages `demo-x` with `args` on `server`, then on a server on `root` that
/// parks one stream at most, starting `other` (a call of several pages) before
/// every page after the first: its stream is parked in place of the one paged,
/// so every such page reopens the tool at the cursor. Both give the same
/// payload, in as many pages. Returns the items and the number of pages.
fn paged_both_ways(
    server: &mut Server,
    root: &Path,
    tools: &Path,
    args: Value,
    other: Value,
    max_tokens: u64,
) -> (Vec<Value>, usize) {
    let (payload, pages) = read_all(server, "demo-x", args.clone(), max_tokens);
    let mut reopening = Server::initialized(root, &["--tools-dir", tools.to_str().unwrap(), "--max-sessions", "1"]);
    let (mut next, mut reopened, mut count) = (args, Vec::new(), 0usize);
    next["max_tokens"] = max_tokens.into();
    next["format"] = "json".into();
    loop {
        let page = reopening.call(3000 + count as i64, "demo-x", next.clone());
        assert_eq!(page["isError"], false, "page {count}: {page}");
        reopened.extend(payload_of(&page));
        count += 1;
        assert!(count <= pages.len(), "reopened, it takes more pages than the {} it takes live", pages.len());
        let Some(cursor) = next_cursor(&page) else { break };
        next = json!({ "cursor": cursor, "max_tokens": max_tokens });
        let evicting = reopening.call(6000 + count as i64, "demo-x", other.clone());
        assert!(next_cursor(&evicting).is_some(), "`other` has more pages, so its stream is parked: {evicting}");
    }
    assert_eq!(String::from_utf8_lossy(&reopened), String::from_utf8_lossy(&payload), "reopened pages differ");
    assert_eq!(count, pages.len());
    let text = String::from_utf8(payload).unwrap();
    let items = serde_json::Deserializer::from_str(&text).into_iter::<Value>().map(Result::unwrap).collect();
    (items, pages.len())
}

/// A line longer than any page here, in two- and three-byte characters.
fn long_line() -> String {
    format!("long {} TODO", "é日本".repeat(150))
}

#[test]
fn tool_new_python_makes_a_project_that_builds_installs_and_pages_a_granted_file() {
    // Installs componentize-py into target/interop/venv if it is missing.
    example("python");
    let fx = Fixture::new();
    let expected = [
        ".gitignore",
        "README.md",
        "app.py",
        "build.sh",
        "wit/deps/clocks/clocks.wit",
        "wit/deps/cordon/tool.wit",
        "wit/deps/filesystem/filesystem.wit",
        "wit/deps/io/io.wit",
        "wit/world.wit",
    ];
    let componentize = workspace().join("target/interop/venv/bin/componentize-py");
    let component = built_project(&fx, "python", &expected, ("CORDON_COMPONENTIZE_PY", componentize));

    let data = fx.root().join("data");
    std::fs::create_dir(&data).unwrap();
    let lines: Vec<String> = (1..=600)
        .map(|i| match i {
            50 => long_line(),
            _ if i % 4 == 0 => format!("line {i} TODO ünï \"quoted\"\t"),
            _ => format!("line {i}"),
        })
        .collect();
    std::fs::write(data.join("notes.txt"), lines.join("\r\n") + "\r\n").unwrap();
    let want: Vec<Value> = (1..)
        .zip(&lines)
        .filter(|(_, text)| text.contains("TODO"))
        .map(|(line, text)| json!({ "line": line, "text": text }))
        .collect();
    assert_eq!(want.len(), 151);

    let tools = fx.dir.path().join("tools");
    let grant = format!("ro:{}", data.display());
    let added =
        ok(&tool_cmd(&tools, &["tool", "add", component.to_str().unwrap(), "--grant", &grant, "--stub-sockets"]));
    assert!(added.contains("installed `demo-x`"), "{added}");
    let mut server = serve(&fx.root(), &tools);
    let args = json!({ "path": "notes.txt", "contains": "TODO" });
    // A call of many pages, started between every two pages of the one checked.
    let other = json!({ "path": "notes.txt", "max_tokens": 30 });
    let (found, pages) = paged_both_ways(&mut server, &fx.root(), &tools, args, other, 100);
    assert_eq!(found, want);
    assert!(pages > 10, "{pages} pages");

    let missing = server.call(2, "demo-x", json!({ "path": "missing.txt" }));
    assert_eq!(missing["_meta"]["cordon/error"]["code"], "not_found", "{missing}");
    let outside = server.call(3, "demo-x", json!({ "path": fx.root().join("hello.txt").to_str().unwrap() }));
    assert_eq!(outside["_meta"]["cordon/error"]["code"], "permission_denied", "{outside}");
    let message = outside["_meta"]["cordon/error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("--grant ro:{}", fx.root().display())), "{message}");
}

#[test]
fn tool_new_js_makes_a_project_that_builds_installs_and_pages_its_text() {
    // Installs componentize-js into target/interop/js-tools if it is missing.
    example("javascript");
    let fx = Fixture::new();
    let expected =
        [".gitignore", "README.md", "app.js", "build.sh", "package-lock.json", "package.json", "wit/tool.wit"];
    let js_tools = workspace().join("target/interop/js-tools");
    let component = built_project(&fx, "js", &expected, ("CORDON_COMPONENTIZE_JS_DIR", js_tools));

    let text: String = (1..=150)
        .map(|i| match i {
            20 => long_line() + "\n",
            _ if i % 3 == 0 => format!("{i} three  words\r\n"),
            _ if i % 5 == 0 => "\n".to_string(),
            _ => format!("line {i}: ünï\t\"{}\"\n", "w ".repeat(i % 7)),
        })
        .collect();
    let want = |contains: Option<&str>| -> Vec<Value> {
        (1..)
            .zip(text.lines())
            .filter(|(_, line)| contains.is_none_or(|needle| line.contains(needle)))
            .map(|(number, line)| json!({ "line": number, "words": line.split_whitespace().count(), "text": line }))
            .collect()
    };

    let tools = fx.dir.path().join("tools");
    ok(&tool_cmd(&tools, &["tool", "add", component.to_str().unwrap()]));
    let mut server = serve(&fx.root(), &tools);
    // A call of many pages, started between every two pages of the one checked.
    let other = json!({ "text": text, "max_tokens": 30 });
    let (all, pages) = paged_both_ways(&mut server, &fx.root(), &tools, json!({ "text": text }), other.clone(), 100);
    assert_eq!(all, want(None));
    assert_eq!(all[2], json!({ "line": 3, "words": 3, "text": "3 three  words" }));
    assert!(pages > 10, "{pages} pages");
    let args = json!({ "text": text, "contains": "é" });
    let (found, _) = paged_both_ways(&mut server, &fx.root(), &tools, args, other, 60);
    assert_eq!(found, want(Some("é")));
    assert_eq!(found.len(), 1, "only the long line");
}
