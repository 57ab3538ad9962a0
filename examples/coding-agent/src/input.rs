//! What the user types: keys on a terminal, lines otherwise.
//!
//! On a terminal the keys come from crossterm's event stream in raw mode,
//! edit the screen's input line, and become events when they mean something
//! to the program (Enter, Ctrl-C, Ctrl-D, an answer key). Without a
//! terminal, each line of standard input is one event, and SIGINT (Ctrl-C
//! in the shell that started it) is the same interrupt as on a terminal.

use crate::screen::{Edit, Screen};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Something the user did that the program acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputEvent {
    /// A line was entered.
    Submit(String),
    /// A single key answered a question (in [`Mode::Choice`]).
    Key(char),
    /// Ctrl-C.
    Interrupt,
    /// Esc, while a question's field or choice is read ([`Mode::Field`],
    /// [`Mode::Choice`]).
    Escape,
    /// Ctrl-D on an empty line, or the end of standard input.
    Eof,
}

/// How keys are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Editing a line; Enter submits it.
    Line,
    /// A question answered by one key.
    Choice,
    /// A form field: a line, or Esc to decline the question.
    Field,
}

enum Source {
    Keys(EventStream),
    Lines {
        lines: Lines<BufReader<Stdin>>,
        eof: bool,
        /// SIGINT, registered once so that none is lost between reads.
        interrupts: Option<Signal>,
    },
}

/// The user's side of the program.
pub struct Input {
    source: Source,
    screen: Arc<Mutex<Screen>>,
}

impl Input {
    /// Keys when the screen is a terminal, lines otherwise.
    pub fn new(screen: Arc<Mutex<Screen>>) -> Self {
        let tty = screen.lock().unwrap_or_else(|e| e.into_inner()).is_tty();
        let source = if tty {
            Source::Keys(EventStream::new())
        } else {
            Source::Lines {
                lines: BufReader::new(tokio::io::stdin()).lines(),
                eof: false,
                interrupts: signal(SignalKind::interrupt()).ok(),
            }
        };
        Self { source, screen }
    }

    /// `true` once standard input (not a terminal) has ended.
    pub fn is_closed(&self) -> bool {
        matches!(self.source, Source::Lines { eof: true, .. })
    }

    /// The next event. Cancel-safe: nothing typed is lost when the future
    /// is dropped, since typed text lives in the screen's input line.
    pub async fn next(&mut self, mode: Mode) -> InputEvent {
        match &mut self.source {
            Source::Lines {
                lines,
                eof,
                interrupts,
            } => {
                if *eof {
                    return InputEvent::Eof;
                }
                let line = match interrupts {
                    Some(interrupts) => tokio::select! {
                        line = lines.next_line() => line,
                        Some(()) = interrupts.recv() => return InputEvent::Interrupt,
                    },
                    None => lines.next_line().await,
                };
                match line {
                    // An answer is a word that starts like one; any other
                    // line is a message, not an answer.
                    Ok(Some(line)) if mode == Mode::Choice => {
                        match line.trim().to_ascii_lowercase().as_str() {
                            "" | "n" | "no" => InputEvent::Key('n'),
                            "y" | "yes" => InputEvent::Key('y'),
                            "a" | "always" => InputEvent::Key('a'),
                            _ => InputEvent::Submit(line),
                        }
                    }
                    Ok(Some(line)) => InputEvent::Submit(line),
                    _ => {
                        *eof = true;
                        InputEvent::Eof
                    }
                }
            }
            Source::Keys(events) => loop {
                let Some(Ok(event)) = events.next().await else {
                    return std::future::pending().await;
                };
                let mut screen = self.screen.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Event::Key(key) if key.kind != KeyEventKind::Release => {
                        if let Some(event) = on_key(&mut screen, key, mode) {
                            return event;
                        }
                    }
                    Event::Paste(text) if mode != Mode::Choice => screen.insert(&text),
                    Event::Resize(..) => screen.redraw(),
                    _ => {}
                }
            },
        }
    }
}

fn on_key(screen: &mut Screen, key: KeyEvent, mode: Mode) -> Option<InputEvent> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c') if ctrl => return Some(InputEvent::Interrupt),
        KeyCode::Char('d') if ctrl => {
            if screen.input_is_empty() {
                return Some(InputEvent::Eof);
            }
            screen.edit(Edit::Delete);
        }
        KeyCode::Esc if mode != Mode::Line => return Some(InputEvent::Escape),
        KeyCode::Char(ch) if mode == Mode::Choice && !ctrl => {
            return Some(InputEvent::Key(ch));
        }
        KeyCode::Char('a') if ctrl => screen.edit(Edit::Home),
        KeyCode::Char('e') if ctrl => screen.edit(Edit::End),
        KeyCode::Char('u') if ctrl => screen.edit(Edit::ClearLine),
        KeyCode::Char('w') if ctrl => screen.edit(Edit::DeleteWord),
        KeyCode::Char(ch) if !ctrl => screen.insert(ch.encode_utf8(&mut [0; 4])),
        KeyCode::Enter if mode != Mode::Choice => {
            return Some(InputEvent::Submit(screen.take_input()));
        }
        KeyCode::Backspace => screen.edit(Edit::Backspace),
        KeyCode::Delete => screen.edit(Edit::Delete),
        KeyCode::Left => screen.edit(Edit::Left),
        KeyCode::Right => screen.edit(Edit::Right),
        KeyCode::Home => screen.edit(Edit::Home),
        KeyCode::End => screen.edit(Edit::End),
        _ => {}
    }
    None
}
