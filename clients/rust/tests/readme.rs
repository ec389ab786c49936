//! The README's Rust code is the starter bot's, word for word: the bot the other tests run.

#[test]
fn readme_code_is_the_starter_bots() {
    let readme = include_str!("../README.md");
    let bot = include_str!("../src/bin/random_bot.rs");
    let mut blocks = 0;
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() == "```rust" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim_end() != "```").collect();
            let text = block.join("\n");
            assert!(
                bot.contains(&text),
                "README block not in src/bin/random_bot.rs:\n{text}"
            );
            blocks += 1;
        }
    }
    assert!(blocks >= 2, "the README shows the bot");
    for page in ["docs/rules/kabaleo.md", "docs/rules/pylos.md", "docs/protocol.md"] {
        assert!(
            readme.contains(&format!("../../{page}")),
            "the README links {page}"
        );
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(page);
        assert!(path.exists(), "{} exists", path.display());
    }
}
