//! The screen: history above, a live area below.
//!
//! On a terminal the bottom of the screen is a small live area that is
//! redrawn in place: the answer line being streamed, a spinner line for what
//! runs now, and the input line, which stays editable while the agent works.
//! Everything finished (complete lines of the answer, tool calls and their
//! results, notices) is printed above it and scrolls away like ordinary
//! output. Streamed text is wrapped here, at word boundaries, so the live
//! area always has a known height and can be cleared exactly.
//!
//! Without a terminal the same calls print plain lines: no live area, no
//! styles, nothing but text a log or a test can read.
//!
//! All output goes through crossterm commands; there are no hand-written
//! escape sequences.

use crossterm::style::{Attribute, Color, ContentStyle, PrintStyledContent, StyledContent};
use crossterm::{cursor, queue, terminal};
use std::io::Write;
use std::time::Instant;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// How a span of text looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// Ordinary text.
    Plain,
    /// Asides: reasoning, hints, status.
    Dim,
    /// Headings and prompts.
    Bold,
    /// Success, added lines.
    Good,
    /// Failure, removed lines.
    Bad,
    /// Warnings and questions.
    Warn,
    /// Tool names, injected messages.
    Accent,
}

impl Look {
    fn style(self) -> ContentStyle {
        let mut style = ContentStyle::new();
        match self {
            Look::Plain => {}
            Look::Dim => style.attributes.set(Attribute::Dim),
            Look::Bold => style.attributes.set(Attribute::Bold),
            Look::Good => style.foreground_color = Some(Color::Green),
            Look::Bad => style.foreground_color = Some(Color::Red),
            Look::Warn => style.foreground_color = Some(Color::Yellow),
            Look::Accent => style.foreground_color = Some(Color::Cyan),
        }
        style
    }
}

/// A line made of styled spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line(pub Vec<(String, Look)>);

impl Line {
    /// One span.
    pub fn new(text: impl Into<String>, look: Look) -> Self {
        Self(vec![(text.into(), look)])
    }

    /// Appends a span.
    pub fn and(mut self, text: impl Into<String>, look: Look) -> Self {
        self.0.push((text.into(), look));
        self
    }

    /// The text without styles.
    pub fn text(&self) -> String {
        self.0.iter().map(|(t, _)| t.as_str()).collect()
    }
}

/// The screen's state; shared behind a mutex by the key reader, the loop
/// observer and the main loop.
pub struct Screen {
    out: Box<dyn Write + Send>,
    tty: bool,
    /// The answer line being streamed, and whether it is reasoning.
    partial: String,
    partial_dim: bool,
    /// Without a terminal: something was printed without its newline.
    open_line: bool,
    /// What runs now, and since when.
    activity: Option<(String, Instant)>,
    frame: usize,
    prompt: Line,
    input: Vec<char>,
    cursor: usize,
    /// Rows of the live area on screen; the cursor is on its last one.
    drawn: u16,
}

impl Screen {
    /// A screen on standard output; `tty` selects the live area.
    pub fn new(tty: bool) -> Self {
        Self::on(Box::new(std::io::stdout()), tty)
    }

    /// Plain lines on standard error: `exec` mode's progress, which keeps
    /// standard output for the answer.
    pub fn plain_stderr() -> Self {
        Self::on(Box::new(std::io::stderr()), false)
    }

    fn on(out: Box<dyn Write + Send>, tty: bool) -> Self {
        Self {
            out,
            tty,
            partial: String::new(),
            partial_dim: false,
            open_line: false,
            activity: None,
            frame: 0,
            // No prompt until the program is ready for one (opening the
            // session comes first): the idle `> ` means it reads a prompt.
            prompt: Line::new("", Look::Dim),
            input: Vec::new(),
            cursor: 0,
            drawn: 0,
        }
    }

    /// `true` on a terminal.
    pub fn is_tty(&self) -> bool {
        self.tty
    }

    fn width(&self) -> usize {
        match terminal::size() {
            Ok((cols, _)) if cols >= 20 => cols as usize,
            _ => 80,
        }
    }

    /// Prints a finished line above the live area.
    pub fn line(&mut self, line: Line) {
        self.lines(std::slice::from_ref(&line));
    }

    /// Prints finished lines above the live area.
    pub fn lines(&mut self, lines: &[Line]) {
        if self.tty {
            self.clear_live();
            for line in lines {
                self.print(line);
                let _ = self.out.write_all(b"\r\n");
            }
            self.draw_live();
        } else {
            self.close_open_line();
            for line in lines {
                let _ = writeln!(self.out, "{}", line.text());
            }
            let _ = self.out.flush();
        }
    }

    /// Appends streamed text (an answer, or reasoning when `dim`).
    pub fn stream(&mut self, chunk: &str, dim: bool) {
        if !self.tty {
            if dim != self.partial_dim && self.open_line {
                self.close_open_line();
            }
            self.partial_dim = dim;
            let _ = write!(self.out, "{chunk}");
            self.open_line = !chunk.ends_with('\n') && (self.open_line || !chunk.is_empty());
            let _ = self.out.flush();
            return;
        }
        let mut finished = Vec::new();
        if dim != self.partial_dim && !self.partial.is_empty() {
            finished.push(self.take_partial());
        }
        self.partial_dim = dim;
        let width = self.width().saturating_sub(1);
        for ch in chunk.chars() {
            if ch == '\n' {
                finished.push(self.take_partial());
                continue;
            }
            self.partial.push(ch);
            if columns(&self.partial) >= width {
                let cut = self
                    .partial
                    .rfind(' ')
                    .filter(|i| *i > 0)
                    .unwrap_or(self.partial.len() - ch.len_utf8());
                let rest = self.partial.split_off(cut);
                finished.push(self.take_partial());
                self.partial = rest.trim_start().to_owned();
            }
        }
        self.clear_live();
        for line in &finished {
            self.print(line);
            let _ = self.out.write_all(b"\r\n");
        }
        self.draw_live();
    }

    /// Ends the streamed line, if one is open.
    pub fn end_stream(&mut self) {
        if self.tty {
            if !self.partial.is_empty() {
                let line = self.take_partial();
                self.line(line);
            }
        } else {
            self.close_open_line();
        }
    }

    fn take_partial(&mut self) -> Line {
        let look = if self.partial_dim {
            Look::Dim
        } else {
            Look::Plain
        };
        Line::new(std::mem::take(&mut self.partial), look)
    }

    fn close_open_line(&mut self) {
        if self.open_line {
            let _ = writeln!(self.out);
            self.open_line = false;
        }
    }

    /// Shows a spinner with `label` and the time since now; `None` hides it.
    pub fn set_activity(&mut self, label: Option<String>) {
        self.activity = label.map(|l| (l, Instant::now()));
        self.redraw();
    }

    /// Changes the spinner's label, keeping its clock.
    pub fn relabel_activity(&mut self, label: String) {
        match &mut self.activity {
            Some((current, _)) => *current = label,
            None => self.activity = Some((label, Instant::now())),
        }
        self.redraw();
    }

    /// Advances the spinner.
    pub fn tick(&mut self) {
        self.frame = self.frame.wrapping_add(1);
        if self.activity.is_some() {
            self.redraw();
        }
    }

    /// Sets the prompt in front of the input line.
    pub fn set_prompt(&mut self, prompt: Line) {
        self.prompt = prompt;
        self.redraw();
    }

    /// Redraws the live area.
    pub fn redraw(&mut self) {
        if self.tty {
            self.clear_live();
            self.draw_live();
        }
    }

    // --- the input line -------------------------------------------------

    /// Inserts typed or pasted text at the cursor.
    pub fn insert(&mut self, text: &str) {
        for ch in text.chars() {
            let ch = if ch == '\n' || ch == '\r' || ch == '\t' {
                ' '
            } else {
                ch
            };
            if !ch.is_control() {
                self.input.insert(self.cursor, ch);
                self.cursor += 1;
            }
        }
        self.redraw();
    }

    /// Edits the input line; returns `false` for keys it does not know.
    pub fn edit(&mut self, edit: Edit) {
        match edit {
            Edit::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.input.remove(self.cursor);
            }
            Edit::Delete if self.cursor < self.input.len() => {
                self.input.remove(self.cursor);
            }
            Edit::Left => self.cursor = self.cursor.saturating_sub(1),
            Edit::Right => self.cursor = (self.cursor + 1).min(self.input.len()),
            Edit::Home => self.cursor = 0,
            Edit::End => self.cursor = self.input.len(),
            Edit::ClearLine => {
                self.input.clear();
                self.cursor = 0;
            }
            Edit::DeleteWord => {
                let mut start = self.cursor;
                while start > 0 && self.input[start - 1] == ' ' {
                    start -= 1;
                }
                while start > 0 && self.input[start - 1] != ' ' {
                    start -= 1;
                }
                self.input.drain(start..self.cursor);
                self.cursor = start;
            }
            _ => {}
        }
        self.redraw();
    }

    /// `true` when nothing is typed.
    pub fn input_is_empty(&self) -> bool {
        self.input.is_empty()
    }

    /// Takes the typed line, leaving the input empty.
    pub fn take_input(&mut self) -> String {
        self.cursor = 0;
        let text: String = std::mem::take(&mut self.input).into_iter().collect();
        self.redraw();
        text
    }

    // --- drawing --------------------------------------------------------

    fn print(&mut self, line: &Line) {
        for (text, look) in &line.0 {
            let _ = queue!(
                self.out,
                PrintStyledContent(StyledContent::new(look.style(), text.as_str()))
            );
        }
    }

    fn clear_live(&mut self) {
        if self.drawn == 0 {
            return;
        }
        let _ = queue!(self.out, cursor::MoveToColumn(0));
        if self.drawn > 1 {
            let _ = queue!(self.out, cursor::MoveUp(self.drawn - 1));
        }
        let _ = queue!(
            self.out,
            terminal::Clear(terminal::ClearType::FromCursorDown)
        );
        self.drawn = 0;
    }

    fn draw_live(&mut self) {
        let width = self.width().saturating_sub(1);
        let mut rows = 0;
        if !self.partial.is_empty() {
            let line = self.partial_view(width);
            self.print(&line);
            let _ = self.out.write_all(b"\r\n");
            rows += 1;
        }
        if let Some((label, since)) = &self.activity {
            let spinner = SPINNER[self.frame % SPINNER.len()];
            let elapsed = since.elapsed().as_secs_f32();
            let text = fit(&format!("{spinner} {label}  {elapsed:.1}s"), width);
            let line = Line::new(text, Look::Dim);
            self.print(&line);
            let _ = self.out.write_all(b"\r\n");
            rows += 1;
        }
        // The input line: the prompt, then as much of the input as fits,
        // scrolled so the cursor stays visible.
        let prompt = if columns(&self.prompt.text()) <= width / 2 {
            self.prompt.clone()
        } else {
            Line::new(fit(&self.prompt.text(), width / 2), Look::Bold)
        };
        let prompt_width = columns(&prompt.text());
        let room = width.saturating_sub(prompt_width).max(2);
        // The first character shown: far enough right that the cursor fits.
        let mut start = self.cursor;
        let mut used = 1;
        while start > 0 && used + char_columns(self.input[start - 1]) <= room {
            start -= 1;
            used += char_columns(self.input[start]);
        }
        let mut shown = String::new();
        let mut shown_width = 0;
        for ch in &self.input[start..] {
            if shown_width + char_columns(*ch) > room {
                break;
            }
            shown_width += char_columns(*ch);
            shown.push(*ch);
        }
        let before_cursor: usize = self.input[start..self.cursor]
            .iter()
            .map(|c| char_columns(*c))
            .sum();
        self.print(&prompt);
        let _ = queue!(self.out, crossterm::style::Print(shown));
        let column = (prompt_width + before_cursor).min(u16::MAX as usize) as u16;
        let _ = queue!(self.out, cursor::MoveToColumn(column));
        rows += 1;
        self.drawn = rows;
        let _ = self.out.flush();
    }

    /// The streamed line as the live area shows it: its end, when the
    /// terminal became narrower than the line since it was wrapped.
    fn partial_view(&self, width: usize) -> Line {
        let look = if self.partial_dim {
            Look::Dim
        } else {
            Look::Plain
        };
        let mut shown: Vec<char> = Vec::new();
        let mut used = 0;
        for ch in self.partial.chars().rev() {
            if used + char_columns(ch) > width {
                break;
            }
            used += char_columns(ch);
            shown.push(ch);
        }
        Line::new(shown.into_iter().rev().collect::<String>(), look)
    }

    /// Clears the live area for good (before the program exits).
    pub fn close(&mut self) {
        if self.tty {
            self.end_stream();
            self.clear_live();
            let _ = self.out.flush();
        } else {
            self.close_open_line();
        }
    }
}

/// An edit of the input line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Delete before the cursor.
    Backspace,
    /// Delete at the cursor.
    Delete,
    /// Cursor left.
    Left,
    /// Cursor right.
    Right,
    /// Cursor to the start.
    Home,
    /// Cursor to the end.
    End,
    /// Clear the line (Ctrl-U).
    ClearLine,
    /// Delete the word before the cursor (Ctrl-W).
    DeleteWord,
}

/// Terminal columns of `text` (wide characters take two).
pub fn columns(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

fn char_columns(ch: char) -> usize {
    UnicodeWidthChar::width(ch).unwrap_or(0)
}

/// `text` cut to `width` columns.
pub fn fit(text: &str, width: usize) -> String {
    if columns(text) <= width {
        return text.to_owned();
    }
    let mut cut = String::new();
    let mut used = 1; // the ellipsis
    for ch in text.chars() {
        if used + char_columns(ch) > width {
            break;
        }
        used += char_columns(ch);
        cut.push(ch);
    }
    cut + "…"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_the_input_line() {
        let mut screen = Screen::new(false);
        screen.insert("hello wrld");
        screen.edit(Edit::Left);
        screen.edit(Edit::Left);
        screen.edit(Edit::Left);
        screen.insert("o");
        assert_eq!(screen.input.iter().collect::<String>(), "hello world");
        screen.edit(Edit::End);
        screen.edit(Edit::DeleteWord);
        assert_eq!(screen.input.iter().collect::<String>(), "hello ");
        screen.edit(Edit::Home);
        screen.edit(Edit::Delete);
        screen.edit(Edit::Backspace);
        assert_eq!(screen.take_input(), "ello ");
        assert!(screen.input_is_empty());
        screen.insert("a\nb");
        assert_eq!(screen.take_input(), "a b");
    }

    #[test]
    fn fit_shortens() {
        assert_eq!(fit("abc", 3), "abc");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("日本語です", 6), "日本…");
        assert_eq!(columns("日本"), 4);
    }
}
