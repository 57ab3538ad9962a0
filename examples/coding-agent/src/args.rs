//! Command-line options, read by hand: a dozen flags do not need a parser
//! crate.

use crate::policy::ApprovalMode;
use std::path::PathBuf;

/// What `--help` prints.
pub const USAGE: &str = "\
coding-agent: a coding agent in the terminal, in scripts and in editors

usage: coding-agent [OPTIONS]              the interactive agent
       coding-agent exec [OPTIONS] [PROMPT] one turn without a terminal
       coding-agent --acp                  served to an editor over ACP

  --workspace DIR     work in DIR (default: the current directory)
  --prompt TEXT       send TEXT as the first message; without a terminal,
                      quit when that turn is done
  --approval MODE     what runs without asking: ask (default), auto-edit
                      (file changes in the workspace), full-auto (also
                      sandboxed shell commands and MCP calls in the
                      workspace); --auto-edit and --full-auto for short
  --yes               approve every tool call without asking
  --resume [ID]       continue a saved session (default: the latest)
  --list              list saved sessions and quit
  --mcp FILE          MCP servers from FILE ([mcp_servers.NAME] tables);
                      default: $XDG_CONFIG_HOME/agentkit/mcp.toml (else
                      ~/.config/agentkit/mcp.toml) when it exists
  --demo              run the offline demo even when a provider is set
  --acp               serve the agent to an editor over the Agent Client
                      Protocol on stdin/stdout (Zed: an agent_servers entry
                      with this command); sessions are shared with the
                      terminal's
  --max-steps N       model calls per turn (default 40); the terminal
                      pauses there, exec mode stops
  --state-dir DIR     where sessions are saved (default:
                      $CODING_AGENT_STATE_DIR, else $XDG_STATE_HOME/coding-agent,
                      else ~/.local/state/coding-agent)
  -h, --help          this text

exec mode: PROMPT is the argument, or standard input when it is absent
or `-`. Progress goes to standard error, the final answer to standard
output. Approvals nobody gave (see --approval) are denied. A question
an MCP server asks during a tool call (elicitation) is declined: nobody
is there to answer it (stderr says so; with --json, a
{\"event\":\"question\",...,\"answer\":\"declined\"} line).
  --json              standard output: every event as a JSON line, then
                      one {\"event\":\"exec_finished\",...} line
  --output-schema FILE  the final answer must be JSON matching the JSON
                      schema in FILE (asked of the model as structured
                      output, then checked)
  exit codes: 0 the turn completed; 1 the turn failed (provider error,
  answer cut short); 2 bad usage or set-up; 3 the step limit was reached;
  4 a tool call was denied; 5 the answer did not match --output-schema;
  130 interrupted (SIGINT)

Environment (no provider variable set: the offline demo runs):
  OPENAI_BASE_URL=http://127.0.0.1:11434/v1   a compatible server (Ollama,
                                              llama.cpp, vLLM, OpenRouter)
  OPENAI_API_KEY=sk-...                       OpenAI (or the key of the server above)
  ANTHROPIC_API_KEY=sk-ant-...                Anthropic
  ANTHROPIC_BASE_URL=https://...              another Anthropic endpoint
  AGENTKIT_PROVIDER=openai|openai-chat|anthropic|compatible
                                              picks the provider explicitly
  AGENTKIT_MODEL=<model name>                 overrides the default model
  AGENTKIT_MAX_TOKENS=<n>                     output tokens per model call
  AGENTKIT_CONTEXT_WINDOW=<n>                 the model's context window in tokens
                                              (else from its name, else 8192); the
                                              conversation is summarized at 80%
  CODING_AGENT_TOOL_CHOICE=required|<tool>    forces a tool call on every model call of
                                              a compatible server (small models that
                                              never call tools; use with --max-steps)
  CODING_AGENT_STATE_DIR=<dir>                where sessions are saved
  CODING_AGENT_LEASE_MS=<ms>                  when a killed process's session is
                                              free again (default 10000)
  XDG_STATE_HOME, XDG_CONFIG_HOME             the usual base directories

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
    /// `exec`: one turn without a terminal.
    pub exec: bool,
    /// `--json` (exec mode).
    pub json: bool,
    /// `--output-schema` (exec mode).
    pub output_schema: Option<PathBuf>,
    /// `--approval`, `--auto-edit`, `--full-auto`.
    pub approval: ApprovalMode,
}

/// Parses `args` (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut args = args.into_iter().peekable();
    parsed.exec = args.next_if(|first| first == "exec").is_some();
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
            "--approval" => {
                let text = value("--approval")?;
                parsed.approval = ApprovalMode::from_name(&text).ok_or_else(|| {
                    format!("--approval wants ask, auto-edit or full-auto, not {text:?}")
                })?;
            }
            "--auto-edit" => parsed.approval = ApprovalMode::AutoEdit,
            "--full-auto" => parsed.approval = ApprovalMode::FullAuto,
            "--json" => parsed.json = true,
            "--output-schema" => parsed.output_schema = Some(value("--output-schema")?.into()),
            "-h" | "--help" => parsed.help = true,
            // exec's prompt: the one argument that is not an option.
            text if parsed.exec && parsed.prompt.is_none() && !text.starts_with("--") => {
                parsed.prompt = Some(text.to_owned());
            }
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
    fn exec_takes_a_prompt_and_its_options() {
        let args = parse_str("exec --full-auto --json --output-schema s.json fix").unwrap();
        assert!(args.exec && args.json);
        assert_eq!(args.approval, ApprovalMode::FullAuto);
        assert_eq!(args.output_schema, Some("s.json".into()));
        assert_eq!(args.prompt.as_deref(), Some("fix"));
        let args = parse_str("exec --approval auto-edit -").unwrap();
        assert_eq!(args.approval, ApprovalMode::AutoEdit);
        assert_eq!(args.prompt.as_deref(), Some("-"));
        assert!(parse_str("exec one two").unwrap_err().contains("\"two\""));
        assert!(!parse_str("--list").unwrap().exec);
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
            parse_str("--approval yolo")
                .unwrap_err()
                .contains("full-auto")
        );
        // A bare word is a prompt only in exec mode.
        assert!(parse_str("fix it").unwrap_err().contains("unknown option"));
        assert!(
            parse_str("--frobnicate")
                .unwrap_err()
                .contains("unknown option")
        );
    }
}
