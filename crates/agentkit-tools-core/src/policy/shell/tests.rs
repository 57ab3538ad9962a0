//! The shell reader's tests: one case per kind of syntax a command can hide behind.

use super::*;

/// Each command as its words joined by spaces.
fn commands(line: &str) -> Vec<String> {
    parse_command_line(line)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn splits_on_every_operator() {
    assert_eq!(
        commands("a 1; b 2 && c || d | e & f\ng |& h"),
        ["a 1", "b 2", "c", "d", "e", "f", "g", "h"]
    );
}

#[test]
fn quotes_and_escapes_hide_operators() {
    assert_eq!(
        commands(r#"echo 'a; b' "c && d" e\;f"#),
        ["echo a; b c && d e;f"]
    );
    assert_eq!(commands("echo \"say \\\"hi\\\"\""), ["echo say \"hi\""]);
    assert_eq!(commands("ec\\\nho x"), ["echo x"]);
    assert_eq!(commands("ls \\\n  -la \\\n"), ["ls -la"]);
}

#[test]
fn substitutions_are_commands_too() {
    assert_eq!(commands("echo $(whoami)"), ["whoami", "echo $(whoami)"]);
    assert_eq!(commands("echo `id -u`"), ["id -u", "echo `...`"]);
    assert_eq!(
        commands("echo \"$(a $(b))\""),
        ["b", "a $(b)", "echo $(a $(b))"]
    );
    assert_eq!(commands("diff <(ls a) >(tee b)"), ["ls a", "tee b", "diff"]);
    assert_eq!(
        commands("echo ${X:-$(rm x)}"),
        ["rm x", "echo ${X:-$(rm x)}"]
    );
    assert_eq!(
        commands("echo $(( 1 + $(n) ))"),
        ["n", "echo $(( 1 + $(n) ))"]
    );
}

#[test]
fn expansion_is_flagged() {
    let parsed = parse_command_line("$CMD 'a*' b* \"$x\" plain").unwrap();
    let flags: Vec<bool> = parsed[0].words.iter().map(|w| w.expands).collect();
    assert_eq!(flags, [true, false, true, true, false]);
}

#[test]
fn assignments_and_redirections_are_not_programs() {
    let parsed = parse_command_line("A=1 B='x y' make 2>&1 >out.log <in -j4").unwrap();
    assert_eq!(parsed[0].assignments, ["A", "B"]);
    assert_eq!(parsed[0].to_string(), "make -j4");
    assert_eq!(commands("> out echo hi"), ["echo hi"]);
    assert_eq!(commands("cmd &> all.log"), ["cmd"]);
    assert_eq!(commands("cmd &>> all.log; next"), ["cmd", "next"]);
    assert_eq!(commands("echo hi >&2 2>>err.log"), ["echo hi"]);
    // Not an assignment: the name is quoted, or the `=` comes later.
    assert_eq!(commands("'A'=1 x"), ["A=1 x"]);
    assert_eq!(commands("make A=1"), ["make A=1"]);
}

#[test]
fn file_redirections_are_recorded_and_descriptors_are_not() {
    let targets = |line: &str| -> Vec<(RedirectKind, String, bool)> {
        parse_command_line(line)
            .unwrap()
            .into_iter()
            .flat_map(|c| c.redirects)
            .map(|r| (r.kind, r.target.text, r.target.expands))
            .collect()
    };
    use RedirectKind::{Read, Write};
    assert_eq!(
        targets("a > o1 >> o2 >| o3 2> e &> b1 &>> b2 >& f <> rw < in"),
        [
            (Write, "o1".into(), false),
            (Write, "o2".into(), false),
            (Write, "o3".into(), false),
            (Write, "e".into(), false),
            (Write, "b1".into(), false),
            (Write, "b2".into(), false),
            (Write, "f".into(), false),
            (Write, "rw".into(), false),
            (Read, "in".into(), false),
        ]
    );
    assert!(targets("a 2>&1 >&2 <&0 >&- <<EOF\nbody\nEOF").is_empty());
    assert!(targets("a <<< word").is_empty());
    assert_eq!(targets("> only"), [(Write, "only".into(), false)]);
    assert_eq!(targets("a > ~/x"), [(Write, "~/x".into(), true)]);
    assert_eq!(
        targets("a > \"$HOME/x\""),
        [(Write, "$HOME/x".into(), true)]
    );
}

#[test]
fn tilde_brace_and_ansi_c_words_expand() {
    let flags = |line: &str| -> Vec<bool> {
        parse_command_line(line).unwrap()[0]
            .words
            .iter()
            .map(|w| w.expands)
            .collect()
    };
    assert_eq!(
        flags("~/bin/x ~root a~b '~' \\~"),
        [true, true, false, false, false]
    );
    assert_eq!(
        flags("{rm,-rf,/} {1..3} {} {x} '{a,b}'"),
        [true, true, false, false, false]
    );
    assert_eq!(flags("$'\\x72m' $'plain'"), [true, true]);
    let parsed = parse_command_line("X=~/bin Y=a:~/c cmd").unwrap();
    assert_eq!(parsed[0].assignments, ["X", "Y"]);
}

#[test]
fn control_words_are_skipped() {
    assert_eq!(
        commands("if test -f x; then rm x; else touch x; fi"),
        ["test -f x", "rm x", "touch x"]
    );
    assert_eq!(commands("for f in *.rs; do wc -l $f; done"), ["wc -l $f"]);
    assert_eq!(
        commands("while true; do sleep 1; done"),
        ["true", "sleep 1"]
    );
    assert_eq!(
        commands("! grep -q x f && { echo a; }"),
        ["grep -q x f", "echo a"]
    );
    assert_eq!(commands("f() { rm -rf /; }; f"), ["rm -rf /", "f"]);
    assert_eq!(commands("function g { rm -rf /; }"), ["rm -rf /"]);
    assert_eq!(commands("[[ -n $(cat x) ]] && ok"), ["cat x", "ok"]);
    assert_eq!(commands("(cd a && ls) | wc"), ["cd a", "ls", "wc"]);
}

#[test]
fn reserved_words_count_only_where_the_shell_sees_them() {
    // Found by the `shell` fuzz target: bash runs a program called `}`,
    // `if` or `!` when the word is quoted, escaped, or comes after a
    // redirection or an assignment.
    assert_eq!(commands("<<E }\nE"), ["}"]);
    assert_eq!(commands("> f if x"), ["if x"]);
    assert_eq!(
        commands("'if' ok; \\! ok; \"{\" ok"),
        ["if ok", "! ok", "{ ok"]
    );
    assert_eq!(commands("X=1 for a in b"), ["for a in b"]);
    assert_eq!(commands("X=1 fi"), ["fi"]);
    // Written plainly in command position they are still syntax.
    assert_eq!(commands("if ok; then ok2; fi"), ["ok", "ok2"]);
    assert_eq!(commands("! ok && { ok2; }"), ["ok", "ok2"]);
}

#[test]
fn comments_are_skipped() {
    assert_eq!(commands("ls # ; rm -rf /\npwd"), ["ls", "pwd"]);
    assert_eq!(commands("echo a#b"), ["echo a#b"]);
}

#[test]
fn here_documents_skip_their_bodies_but_not_substitutions() {
    assert_eq!(
        commands("cat <<EOF > f\nrm -rf /\n$(whoami)\nEOF\nls"),
        ["cat", "whoami", "ls"]
    );
    assert_eq!(commands("cat <<'EOF'\n$(whoami)\nEOF\nls"), ["cat", "ls"]);
    assert_eq!(commands("cat <<-END\n\trm x\n\tEND\nls"), ["cat", "ls"]);
    assert_eq!(commands("cat <<< \"$(id)\""), ["id", "cat"]);
}

#[test]
fn malformed_lines_are_errors() {
    assert_eq!(
        parse_command_line("echo 'open"),
        Err(ShellParseError::Unterminated("single quote"))
    );
    assert!(parse_command_line("echo \"open").is_err());
    assert!(parse_command_line("echo $(open").is_err());
    assert!(parse_command_line("echo `open").is_err());
    assert!(parse_command_line("echo )").is_err());
    assert!(parse_command_line("cat <<EOF\nbody").is_err());
    assert_eq!(
        parse_command_line("case x in a) rm;; esac"),
        Err(ShellParseError::Unsupported("case"))
    );
    // A backtick closing its substitution inside an open `$(`: an
    // error at once, not a loop pushing empty words (found by fuzzing).
    assert_eq!(
        parse_command_line("ok2 \\ `= X=bad$( ` ok Ebad | "),
        Err(ShellParseError::Unexpected('`', 17))
    );
    assert!(parse_command_line("echo `a $(b ` c").is_err());
    let deep = format!("{}x{}", "$(".repeat(40), ")".repeat(40));
    assert_eq!(parse_command_line(&deep), Err(ShellParseError::TooDeep));
}
