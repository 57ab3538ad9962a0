//! Command-line options, read by hand: a dozen flags do not need a parser
//! crate.

use std::path::PathBuf;

/// What `--help` prints.
pub const USAGE: &str = "\
coding-agent: an interactive coding agent in the terminal

usage: coding-agent [OPTIONS]

  --workspace DIR     work in DIR (default: the current directory)
  --prompt TEXT       send TEXT as the first message; without a terminal,
                      quit when that turn is done
  --yes               approve every tool call without asking
  --resume [ID]       continue a saved session (default: the latest)
  --list              list saved sessions and quit
  --mcp FILE          MCP servers from FILE ([mcp_servers.NAME] tables);
                      default: ~/.config/agentkit/mcp.toml when it exists
  --demo              run the offline demo even when a provider is set
  --acp               serve the agent to an editor over the Agent Client
                      Protocol on stdin/stdout (Zed: an agent_servers entry
                      with this command); sessions are shared with the
                      terminal's
  --max-steps N       model calls per turn before pausing (default 40)
  --state-dir DIR     where sessions are saved (default:
                      $CODING_AGENT_STATE_DIR or ~/.local/state/coding-agent);
                      a killed process's session is free again after
                      $CODING_AGENT_LEASE_MS (default 10000)
  -h, --help          this text

Provider, from the environment (none set: the offline demo runs):
  OPENAI_BASE_URL=http://127.0.0.1:11434/v1   a compatible server (Ollama,
                                              llama.cpp, vLLM, OpenRouter)
  OPENAI_API_KEY=sk-...                       OpenAI (or the key of the server above)
  ANTHROPIC_API_KEY=sk-ant-...                Anthropic
  AGENTKIT_MODEL=<model name>                 overrides the default model

While the agent works, type and press Enter to steer it (the message is
injected at the next safe point). Start the message with ! to make it
urgent (the rest of the tool round is skipped), with + to keep it as a
follow-up for when the turn is done. Ctrl-C cancels the turn; Ctrl-C twice
or Ctrl-D at the prompt quits.";

/// The parsed options.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    /// `--workspace`.
    pub workspace: Option<PathBuf>,
    /// `--prompt`.
    pub prompt: Option<String>,
    /// `--yes`.
    pub yes: bool,
    /// `--resume`: `Some(None)` is the latest session.
    pub resume: Option<Option<String>>,
    /// `--list`.
    pub list: bool,
    /// `--mcp`.
    pub mcp: Option<PathBuf>,
    /// `--demo`.
    pub demo: bool,
    /// `--acp`.
    pub acp: bool,
    /// `--max-steps`.
    pub max_steps: Option<u32>,
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
    /// `--help`.
    pub help: bool,
}

/// Parses `args` (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value; see --help"))
        };
        match arg.as_str() {
            "--workspace" => parsed.workspace = Some(value("--workspace")?.into()),
            "--prompt" => parsed.prompt = Some(value("--prompt")?),
            "--yes" | "-y" => parsed.yes = true,
            "--list" => parsed.list = true,
            "--mcp" => parsed.mcp = Some(value("--mcp")?.into()),
            "--demo" => parsed.demo = true,
            "--acp" => parsed.acp = true,
            "--state-dir" => parsed.state_dir = Some(value("--state-dir")?.into()),
            "--max-steps" => {
                let text = value("--max-steps")?;
                let steps =
                    text.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        format!("--max-steps wants a positive number, not {text:?}")
                    })?;
                parsed.max_steps = Some(steps);
            }
            "--resume" => {
                let id = args.next_if(|next| !next.starts_with("--"));
                parsed.resume = Some(id);
            }
            "-h" | "--help" => parsed.help = true,
            other => return Err(format!("unknown option {other:?}; see --help")),
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Args, String> {
        parse(line.split_whitespace().map(String::from))
    }

    #[test]
    fn options_are_read() {
        let args = parse_str("--workspace /w --yes --max-steps 3 --resume --list --acp").unwrap();
        assert_eq!(args.workspace, Some("/w".into()));
        assert!(args.yes && args.list && args.acp);
        assert_eq!(args.max_steps, Some(3));
        assert_eq!(args.resume, Some(None));
        assert_eq!(
            parse_str("--resume ca-12").unwrap().resume,
            Some(Some("ca-12".into()))
        );
    }

    #[test]
    fn mistakes_are_reported() {
        assert!(
            parse_str("--workspace")
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(parse_str("--max-steps 0").unwrap_err().contains("positive"));
        assert!(
            parse_str("--frobnicate")
                .unwrap_err()
                .contains("unknown option")
        );
    }
}
