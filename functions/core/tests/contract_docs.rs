//! The code cites the contract as `spec x.y` and `DECISIONS §n`. A clone
//! carries both documents in `docs/` (docs/spec/interface-specification.md,
//! docs/DECISIONS.md), so every citation must name a section they have, and
//! the copies must equal the team's originals in `../shared` when those are
//! beside the clone (CI puts them there).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const COPIES: [(&str, &str); 2] = [
    (
        "docs/spec/interface-specification.md",
        "../shared/spec/interface-specification.md",
    ),
    ("docs/DECISIONS.md", "../shared/DECISIONS.md"),
];

#[test]
fn the_copies_in_docs_equal_the_shared_originals() {
    let root = root();
    for (copy, original) in COPIES {
        let copy_text = fs::read_to_string(root.join(copy))
            .unwrap_or_else(|e| panic!("{copy} is missing: {e}"));
        match fs::read_to_string(root.join(original)) {
            Ok(original_text) => assert!(
                copy_text == original_text,
                "{copy} differs from {original}: copy the original over it \
                 (cp {original} {copy}) and review what the change means"
            ),
            Err(_) => eprintln!("{original} is not beside this clone; {copy} not compared"),
        }
    }
}

/// Section numbers of a document's headings: `## 4.` / `### 4.1` → "4", "4.1";
/// `## 8a.` → "8a".
fn sections(path: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|line| line.starts_with('#'))
        .filter_map(|line| line.trim_start_matches('#').split_whitespace().next())
        .map(|number| number.trim_end_matches('.').to_string())
        .filter(|number| number.starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

/// Every `.rs` file of the workspace's crates and tests.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target"
                && name != "node_modules"
                && !name.to_string_lossy().starts_with('.')
            {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The section numbers cited after `marker` in `text` (`spec 4.1`, `§11`).
fn citations(text: &str, marker: &str) -> Vec<String> {
    text.match_indices(marker)
        .map(|(at, _)| {
            text[at + marker.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect::<String>()
                .trim_end_matches('.')
                .to_string()
        })
        .filter(|number| number.starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

#[test]
fn every_citation_in_the_code_names_a_section_of_the_copies() {
    let root = root();
    let spec = sections(&root.join(COPIES[0].0));
    let decisions = sections(&root.join(COPIES[1].0));
    let mut files = Vec::new();
    for dir in ["functions", "tests", "fuzz", "bench"] {
        if root.join(dir).is_dir() {
            sources(&root.join(dir), &mut files);
        }
    }
    let mut cited = 0;
    let mut unknown = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        for (marker, known) in [("spec ", &spec), ("DECISIONS §", &decisions)] {
            for number in citations(&text, marker) {
                cited += 1;
                if !known.contains(&number) {
                    unknown.push(format!("{}: {marker}{number}", file.display()));
                }
            }
        }
    }
    assert!(
        cited > 40,
        "only {cited} citations found: is the search broken?"
    );
    assert!(
        unknown.is_empty(),
        "citations of sections the copies do not have:\n{}",
        unknown.join("\n")
    );
}
