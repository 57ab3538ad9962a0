//! A small POSIX shell reader: which commands would this line run?
//!
//! The command policy must judge every program a line starts, and a model (or
//! a prompt injection) can hide one behind chaining (`a && b`, `a; b`,
//! `a | b`, `a & b`, newlines), substitutions (`$(b)`, `` `b` ``, `<(b)`),
//! subshells, quotes and escapes. This reader understands that much syntax
//! and no more: it does not expand variables or globs, it only notes that a
//! word would expand, so a policy can refuse to trust a program name it cannot
//! know. Control words (`if`, `then`, `do`, `!`, `{` ...) are skipped so the
//! commands inside are seen; `for` headers and `[[ ... ]]` tests run nothing
//! themselves; `case` is not supported and reported as an error, which the
//! policy turns into a request for approval. Here-document bodies are skipped,
//! except for the substitutions an unquoted one would run.

use std::fmt;

/// Substitutions nested deeper than this are refused rather than parsed.
const MAX_NESTING: usize = 32;

/// A line the reader cannot take apart with confidence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShellParseError {
    /// A quote, substitution or subshell is not closed.
    #[error("unterminated {0}")]
    Unterminated(&'static str),
    /// A character where the syntax does not allow it.
    #[error("unexpected {0:?} at character {1}")]
    Unexpected(char, usize),
    /// Syntax this reader does not follow (`case`).
    #[error("unsupported shell syntax: {0}")]
    Unsupported(&'static str),
    /// Substitutions nest too deeply.
    #[error("substitutions nest too deeply")]
    TooDeep,
}

/// One word of a command, with its quotes removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellWord {
    /// The literal text; expansions are kept as written (`$HOME`).
    pub text: String,
    /// The shell would change this word before running it: it holds a
    /// variable, a substitution or an unquoted glob, so `text` is not what
    /// the program receives.
    pub expands: bool,
}

/// What a redirection does with its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectKind {
    /// `< file`: the file is read.
    Read,
    /// `> file`, `>> file`, `>| file`, `&> file`, `>& file`, `<> file`: the
    /// file is created or written.
    Write,
}

/// A redirection to or from a file. Duplications (`2>&1`, `>&-`), here
/// documents and here-strings name no file and are not listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellRedirect {
    /// Whether the file is read or written.
    pub kind: RedirectKind,
    /// The file, as written; `expands` says the shell would compute it
    /// (`~/.bashrc`, `$HOME/x`), so the text is not the real path.
    pub target: ShellWord,
}

/// One simple command: optional `NAME=value` assignments, then the words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Names of the variables assigned in front of the command (`FOO` in
    /// `FOO=1 make`).
    pub assignments: Vec<String>,
    /// The program and its arguments.
    pub words: Vec<ShellWord>,
    /// The files it redirects from or to, in order.
    pub redirects: Vec<ShellRedirect>,
}

impl SimpleCommand {
    /// The program, the first word.
    pub fn program(&self) -> Option<&ShellWord> {
        self.words.first()
    }
}

impl fmt::Display for SimpleCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = self.words.iter().map(|w| w.text.as_str()).collect();
        f.write_str(&words.join(" "))
    }
}

/// Every simple command `line` would run, in the order they appear, those
/// inside substitutions and subshells included. Commands that consist only
/// of assignments (`X=1`) are listed too, with no words.
///
/// ```
/// use agentkit_tools_core::policy::parse_command_line;
///
/// let commands = parse_command_line("cargo build && echo \"$(git rev-parse HEAD)\" | tee log")?;
/// let programs: Vec<_> = commands.iter().map(|c| c.words[0].text.as_str()).collect();
/// assert_eq!(programs, ["cargo", "git", "echo", "tee"]);
/// # Ok::<(), agentkit_tools_core::policy::ShellParseError>(())
/// ```
pub fn parse_command_line(line: &str) -> Result<Vec<SimpleCommand>, ShellParseError> {
    let mut reader = Reader {
        chars: line.chars().collect(),
        pos: 0,
        commands: Vec::new(),
        heredocs: Vec::new(),
        depth: 0,
        backticks: 0,
    };
    reader.list(End::Eof)?;
    Ok(reader.commands)
}

/// What closes the list being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    Paren,
    Backtick,
}

/// Words that open or close compound commands; the command after them is
/// what runs.
const CONTROL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "function",
    "in",
];

/// Commands being built, with what the reader learned about them.
#[derive(Default)]
struct Building {
    command: SimpleCommand,
    /// `for x in ...`, `[[ ... ]]`, function headers: the words run nothing.
    inert: bool,
    /// A redirection came before any word: the shell no longer looks for
    /// reserved words (`> f if` runs a program called `if`).
    redirected: bool,
}

struct Reader {
    chars: Vec<char>,
    pos: usize,
    commands: Vec<SimpleCommand>,
    /// Here-documents whose bodies start after the next newline: the
    /// delimiter, whether tabs are stripped (`<<-`), whether the body expands.
    heredocs: Vec<(String, bool, bool)>,
    depth: usize,
    /// Open backtick substitutions: inside one, a backtick closes it rather
    /// than opening another.
    backticks: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn finish(&mut self, building: &mut Building) {
        let done = std::mem::take(building);
        let empty = done.command.words.is_empty()
            && done.command.assignments.is_empty()
            && done.command.redirects.is_empty();
        if !done.inert && !empty {
            self.commands.push(done.command);
        }
    }

    /// Reads commands until `end`, consuming the closing character.
    fn list(&mut self, end: End) -> Result<(), ShellParseError> {
        if end == End::Backtick {
            self.backticks += 1;
        }
        let result = self.list_inner(end);
        if end == End::Backtick {
            self.backticks -= 1;
        }
        result
    }

    fn list_inner(&mut self, end: End) -> Result<(), ShellParseError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(ShellParseError::TooDeep);
        }
        let mut building = Building::default();
        loop {
            while matches!(self.peek(), Some(' ' | '\t')) {
                self.pos += 1;
            }
            let Some(c) = self.peek() else {
                return match end {
                    End::Eof => {
                        self.finish(&mut building);
                        self.depth -= 1;
                        Ok(())
                    }
                    End::Paren => Err(ShellParseError::Unterminated("$( or (")),
                    End::Backtick => Err(ShellParseError::Unterminated("backtick")),
                };
            };
            match c {
                // A line continuation between words joins the lines.
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '\n' => {
                    self.pos += 1;
                    self.finish(&mut building);
                    self.heredoc_bodies()?;
                }
                ';' | '|' => {
                    self.pos += 1;
                    if matches!(self.peek(), Some('|' | '&' | ';')) {
                        self.pos += 1;
                    }
                    self.finish(&mut building);
                }
                '&' if self.peek_at(1) == Some('>') => self.redirection(&mut building)?,
                '&' => {
                    self.pos += 1;
                    if self.peek() == Some('&') {
                        self.pos += 1;
                    }
                    self.finish(&mut building);
                }
                '(' => {
                    self.pos += 1;
                    if !building.command.words.is_empty() {
                        // `name() { ... }` defines a function: the header runs nothing.
                        if self.peek() == Some(')') {
                            self.pos += 1;
                            building.inert = true;
                            self.finish(&mut building);
                            continue;
                        }
                        return Err(ShellParseError::Unexpected('(', self.pos - 1));
                    }
                    self.finish(&mut building);
                    self.list(End::Paren)?;
                }
                ')' if end == End::Paren => {
                    self.pos += 1;
                    self.finish(&mut building);
                    self.depth -= 1;
                    return Ok(());
                }
                '`' if end == End::Backtick => {
                    self.pos += 1;
                    self.finish(&mut building);
                    self.depth -= 1;
                    return Ok(());
                }
                ')' => return Err(ShellParseError::Unexpected(')', self.pos)),
                '#' => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.pos += 1;
                    }
                }
                '<' | '>' => self.redirection(&mut building)?,
                _ => {
                    let start = self.pos;
                    let (word, assignment) = self.word()?;
                    if self.pos == start {
                        // Nothing this reader can take as a word (a backtick
                        // closing an outer substitution inside an open
                        // `$(`): refuse rather than loop on it. Found by
                        // fuzzing: the loop pushed empty words until memory
                        // ran out.
                        return Err(ShellParseError::Unexpected(c, self.pos));
                    }
                    let is_fd = !word.expands
                        && !word.text.is_empty()
                        && word.text.chars().all(|c| c.is_ascii_digit())
                        && self.pos - start == word.text.len()
                        && matches!(self.peek(), Some('<' | '>'));
                    if is_fd {
                        self.redirection(&mut building)?;
                        continue;
                    }
                    // Reserved words count only as written: `'if'`, `\!`
                    // and `"{"` are programs to the shell.
                    let raw = self.chars[start..self.pos]
                        .iter()
                        .copied()
                        .eq(word.text.chars());
                    self.add_word(&mut building, word, assignment, raw)?;
                }
            }
        }
    }

    fn add_word(
        &mut self,
        building: &mut Building,
        word: ShellWord,
        assignment: Option<String>,
        raw: bool,
    ) -> Result<(), ShellParseError> {
        let command = &mut building.command;
        // Where the shell recognises reserved words: the first word, written
        // plainly, with no assignment or redirection before it.
        let reserved = raw && !word.expands && !building.redirected;
        if command.words.is_empty() {
            if let Some(name) = assignment {
                command.assignments.push(name);
                return Ok(());
            }
            if reserved && command.assignments.is_empty() {
                match word.text.as_str() {
                    "case" => return Err(ShellParseError::Unsupported("case")),
                    "for" | "select" | "[[" => {
                        building.inert = true;
                        command.words.push(word);
                        return Ok(());
                    }
                    text if CONTROL_WORDS.contains(&text) => {
                        if text == "function" {
                            building.inert = true;
                            command.words.push(word);
                        }
                        return Ok(());
                    }
                    _ => {}
                }
            }
        } else if building.inert
            && reserved
            && word.text == "{"
            && command.words[0].text == "function"
        {
            // `function name {`: the header ends, the body runs.
            self.finish(building);
            return Ok(());
        }
        command.words.push(word);
        Ok(())
    }

    /// A redirection operator and its target word, recorded on the command
    /// being built when it names a file; process substitutions (`<(cmd)`,
    /// `>(cmd)`) are read as commands.
    fn redirection(&mut self, building: &mut Building) -> Result<(), ShellParseError> {
        if building.command.words.is_empty() {
            building.redirected = true;
        }
        let first = self.peek();
        self.pos += 1;
        let mut heredoc = None;
        // Some(kind) for a file, None for here-strings; duplications are
        // decided once the target is known.
        let mut kind = Some(if first == Some('<') {
            RedirectKind::Read
        } else {
            RedirectKind::Write
        });
        let mut duplicates = false;
        match (first, self.peek()) {
            (Some('<' | '>'), Some('(')) => {
                self.pos += 1;
                return self.list(End::Paren);
            }
            (Some('<'), Some('<')) => {
                self.pos += 1;
                kind = None;
                if self.peek() == Some('<') {
                    self.pos += 1; // here-string: the target is an ordinary word
                } else {
                    let strip_tabs = self.peek() == Some('-');
                    if strip_tabs {
                        self.pos += 1;
                    }
                    heredoc = Some(strip_tabs);
                }
            }
            // `<>` opens for reading and writing.
            (Some('<'), Some('>')) => {
                self.pos += 1;
                kind = Some(RedirectKind::Write);
            }
            // `<&n`, `>&n`: duplicate a descriptor (or, for `>& file`, write).
            (Some('<' | '>'), Some('&')) => {
                self.pos += 1;
                duplicates = true;
            }
            (_, Some('>' | '&' | '|')) => {
                self.pos += 1;
                // `&>>` appends both streams.
                if first == Some('&') && self.peek() == Some('>') {
                    self.pos += 1;
                }
            }
            _ => {}
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        if matches!(
            self.peek(),
            None | Some('\n' | ';' | '|' | '&' | '(' | ')' | '<' | '>')
        ) {
            return Err(ShellParseError::Unterminated("redirection"));
        }
        let quoted_before = self.pos;
        let (target, _) = self.word()?;
        if let Some(strip_tabs) = heredoc {
            let quoted = self.chars[quoted_before..self.pos]
                .iter()
                .any(|c| matches!(c, '\'' | '"' | '\\'));
            self.heredocs.push((target.text, strip_tabs, !quoted));
            return Ok(());
        }
        let names_descriptor = !target.expands
            && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
        // `<&n`, `>&n`, `>&-` duplicate or close a descriptor; bash's
        // `>& file` writes the file (an expanding target might be either, and
        // is recorded: it cannot be judged).
        if duplicates && (first == Some('<') || names_descriptor) {
            return Ok(());
        }
        if let Some(kind) = kind {
            building
                .command
                .redirects
                .push(ShellRedirect { kind, target });
        }
        Ok(())
    }

    /// Skips the bodies of pending here-documents, which start right after a
    /// newline, reading the substitutions of those that expand.
    fn heredoc_bodies(&mut self) -> Result<(), ShellParseError> {
        for (delimiter, strip_tabs, expands) in std::mem::take(&mut self.heredocs) {
            loop {
                if self.peek().is_none() {
                    return Err(ShellParseError::Unterminated("here-document"));
                }
                let line_start = self.pos;
                let mut line_end = line_start;
                while self.chars.get(line_end).is_some_and(|c| *c != '\n') {
                    line_end += 1;
                }
                let line: String = self.chars[line_start..line_end].iter().collect();
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter {
                    self.pos = (line_end + 1).min(self.chars.len());
                    break;
                }
                if expands {
                    while self.pos < line_end {
                        match self.peek() {
                            Some('\\') => self.pos += 2,
                            Some('$') if self.peek_at(1) == Some('(') => {
                                self.dollar()?;
                            }
                            Some('`') => {
                                self.pos += 1;
                                self.list(End::Backtick)?;
                            }
                            _ => self.pos += 1,
                        }
                    }
                    // A substitution may span lines; continue from where it ended.
                    if self.pos > line_end {
                        continue;
                    }
                }
                self.pos = (line_end + 1).min(self.chars.len());
            }
        }
        Ok(())
    }

    /// One word, with quotes removed; also the assignment's name when the
    /// word is `NAME=value` with an unquoted name.
    fn word(&mut self) -> Result<(ShellWord, Option<String>), ShellParseError> {
        let mut text = String::new();
        let mut expands = false;
        // Length of `text` before the first quote or expansion: an assignment
        // name must lie entirely in that prefix.
        let mut plain_prefix: Option<usize> = None;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '`' if self.backticks > 0 => break,
                '\\' => {
                    plain_prefix.get_or_insert(text.len());
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1, // line continuation
                        Some(escaped) => {
                            text.push(escaped);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    plain_prefix.get_or_insert(text.len());
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err(ShellParseError::Unterminated("single quote")),
                            Some('\'') => break,
                            Some(c) => text.push(c),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    plain_prefix.get_or_insert(text.len());
                    self.pos += 1;
                    expands |= self.double_quoted(&mut text)?;
                }
                '$' => {
                    plain_prefix.get_or_insert(text.len());
                    expands |= self.dollar_in_word(&mut text)?;
                }
                '`' => {
                    plain_prefix.get_or_insert(text.len());
                    self.pos += 1;
                    self.list(End::Backtick)?;
                    text.push_str("`...`");
                    expands = true;
                }
                '*' | '?' => {
                    expands = true;
                    text.push(c);
                    self.pos += 1;
                }
                // `~`, `~user`, and `~` after `=` or `:` in an assignment
                // become a home directory.
                '~' if plain_prefix.is_none()
                    && (text.is_empty() || text.ends_with('=') || text.ends_with(':')) =>
                {
                    expands = true;
                    text.push(c);
                    self.pos += 1;
                }
                // Brace expansion: `{rm,-rf,~}` is three words, `{a..c}` three.
                '{' if self.brace_expansion_ahead() => {
                    expands = true;
                    text.push(c);
                    self.pos += 1;
                }
                // A bracket glob needs its closing bracket; `[[` and `[` alone
                // are the test commands.
                '[' if self.chars[self.pos..]
                    .iter()
                    .take_while(|c| !matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|'))
                    .skip(1)
                    .any(|c| *c == ']') =>
                {
                    expands = true;
                    text.push(c);
                    self.pos += 1;
                }
                _ => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        let plain = &text[..plain_prefix.unwrap_or(text.len())];
        let assignment = plain.split_once('=').and_then(|(name, _)| {
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            valid.then(|| name.to_owned())
        });
        Ok((ShellWord { text, expands }, assignment))
    }

    /// Whether the unquoted `{` at the cursor opens a brace expansion: a
    /// closing `}` in the same word with a `,` or `..` between.
    fn brace_expansion_ahead(&self) -> bool {
        let mut depth = 0usize;
        let mut separated = false;
        let mut previous = '{';
        for &c in &self.chars[self.pos..] {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => return false,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return separated;
                    }
                }
                ',' => separated = true,
                '.' if previous == '.' => separated = true,
                _ => {}
            }
            previous = c;
        }
        false
    }

    /// The inside of `"..."`, up to and including the closing quote. Returns
    /// whether anything in it expands.
    fn double_quoted(&mut self, text: &mut String) -> Result<bool, ShellParseError> {
        let mut expands = false;
        loop {
            match self.peek() {
                None => return Err(ShellParseError::Unterminated("double quote")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(expands);
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c @ ('$' | '`' | '"' | '\\')) => {
                            text.push(c);
                            self.pos += 1;
                        }
                        Some('\n') => self.pos += 1,
                        _ => text.push('\\'),
                    }
                }
                Some('$') => expands |= self.dollar_in_word(text)?,
                Some('`') => {
                    self.pos += 1;
                    self.list(End::Backtick)?;
                    text.push_str("`...`");
                    expands = true;
                }
                Some(c) => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// A `$` inside a word: parameter, substitution, arithmetic, or a plain
    /// dollar sign. Returns whether it expands.
    fn dollar_in_word(&mut self, text: &mut String) -> Result<bool, ShellParseError> {
        let start = self.pos;
        match self.peek_at(1) {
            Some('(') | Some('{') => {
                self.dollar()?;
                text.extend(&self.chars[start..self.pos]);
                Ok(true)
            }
            Some(c) if c.is_ascii_alphanumeric() || "_?@*#$!-".contains(c) => {
                self.pos += 2;
                if c.is_ascii_alphabetic() || c == '_' {
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        self.pos += 1;
                    }
                }
                text.extend(&self.chars[start..self.pos]);
                Ok(true)
            }
            Some('\'') => {
                // $'...' quoting: escapes decoded by the shell.
                self.pos += 2;
                loop {
                    match self.peek() {
                        None => return Err(ShellParseError::Unterminated("$' quote")),
                        Some('\\') => {
                            if let Some(c) = self.peek_at(1) {
                                text.push(c);
                            }
                            self.pos += 2;
                        }
                        Some('\'') => {
                            self.pos += 1;
                            // The escapes (`\x72`, `\n`) are decoded by the
                            // shell: the text kept here is not what runs.
                            return Ok(true);
                        }
                        Some(c) => {
                            text.push(c);
                            self.pos += 1;
                        }
                    }
                }
            }
            _ => {
                text.push('$');
                self.pos += 1;
                Ok(false)
            }
        }
    }

    /// `$(...)`, `$((...))` or `${...}`, starting at the `$`.
    fn dollar(&mut self) -> Result<(), ShellParseError> {
        match (self.peek_at(1), self.peek_at(2)) {
            (Some('('), Some('(')) => {
                // Arithmetic runs no command, but may hold substitutions.
                self.pos += 3;
                let mut open = 2usize;
                while open > 0 {
                    match self.peek() {
                        None => return Err(ShellParseError::Unterminated("$((")),
                        Some('$')
                            if self.peek_at(1) == Some('(') && self.peek_at(2) != Some('(') =>
                        {
                            self.pos += 2;
                            self.list(End::Paren)?;
                        }
                        Some('(') => {
                            open += 1;
                            self.pos += 1;
                        }
                        Some(')') => {
                            open -= 1;
                            self.pos += 1;
                        }
                        Some(_) => self.pos += 1,
                    }
                }
                Ok(())
            }
            (Some('('), _) => {
                self.pos += 2;
                self.list(End::Paren)
            }
            (Some('{'), _) => {
                // ${name:-$(cmd)} can run commands in its default value.
                self.pos += 2;
                loop {
                    match self.peek() {
                        None => return Err(ShellParseError::Unterminated("${")),
                        Some('}') => {
                            self.pos += 1;
                            return Ok(());
                        }
                        Some('$') if matches!(self.peek_at(1), Some('(' | '{')) => self.dollar()?,
                        Some('`') => {
                            self.pos += 1;
                            self.list(End::Backtick)?;
                        }
                        Some(_) => self.pos += 1,
                    }
                }
            }
            _ => {
                self.pos += 1;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;
