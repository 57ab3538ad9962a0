//! Running one command to its end: exit, timeout or cancellation.
//!
//! Output is read while the command runs (a child blocked on a full pipe
//! would never exit), and the three ways a run can end race in one `select!`.
//! When the shell exits but something it left in the background still holds
//! the pipes, the run waits only a short grace period for the output to
//! close and then kills the group: the call is over, and a background
//! process must not keep it open until the timeout.

use crate::capture::CappedOutput;
use crate::contain::{CallTag, SweepOnDrop};
use agentkit_core::TurnCancellation;
use agentkit_tools_core::ProcessGroup;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::Child;
use tokio::time::{Instant, sleep_until};

/// How long output may stay open after the shell exits.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// How long output already written before a kill is still collected.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Ending {
    /// The shell exited.
    Exited(ExitStatus),
    /// The deadline passed; the group was killed.
    TimedOut,
    /// The command printed more than its byte limit; the group was killed.
    OutputLimit,
    /// The turn was cancelled; the group was killed.
    Cancelled,
}

/// A finished run.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) ending: Ending,
    pub(crate) stdout: CappedOutput,
    pub(crate) stderr: CappedOutput,
    pub(crate) elapsed: Duration,
}

/// How much of a run's output is kept, and how much it may print at all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutputLimits {
    /// Bytes kept per stream (head and tail).
    pub(crate) kept: usize,
    /// Bytes both streams may print together before the group is killed.
    pub(crate) total: u64,
}

/// Waits for `child` (spawned with stdout and stderr piped, in its own
/// process group) to end, killing its group at the deadline, on
/// cancellation, or once it printed more than `limits.total`; then every
/// process tagged with `tag` that left the group is killed too.
pub(crate) async fn run(
    mut child: Child,
    timeout: Duration,
    limits: OutputLimits,
    cancellation: &TurnCancellation,
    tag: CallTag,
) -> io::Result<Finished> {
    // Declared first, dropped last: an abandoned run still sweeps.
    let sweep = SweepOnDrop::new(tag, child.id());
    let max_output_bytes = limits.kept;
    let started = Instant::now();
    let deadline = started + timeout;
    let group = ProcessGroup::led_by(child.id());
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out = CappedOutput::new(max_output_bytes);
    let mut err = CappedOutput::new(max_output_bytes);
    let mut out_buf = vec![0u8; 8192];
    let mut err_buf = vec![0u8; 8192];
    let mut status: Option<ExitStatus> = None;
    let mut grace_until: Option<Instant> = None;

    let ending = loop {
        if let Some(status) = status
            && stdout.is_none()
            && stderr.is_none()
        {
            break Ending::Exited(status);
        }
        if (out.total() + err.total()) as u64 > limits.total {
            break Ending::OutputLimit;
        }
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf) => match read {
                Some(n) => out.push(&out_buf[..n]),
                None => stdout = None,
            },
            read = read_some(&mut stderr, &mut err_buf) => match read {
                Some(n) => err.push(&err_buf[..n]),
                None => stderr = None,
            },
            exit = child.wait(), if status.is_none() => {
                status = Some(exit?);
                grace_until = Some(Instant::now() + EXIT_GRACE);
            }
            _ = sleep_until(grace_until.unwrap_or(deadline)), if grace_until.is_some() => {
                tracing::debug!("output still open after the shell exited; killing its group");
                group.kill();
                break Ending::Exited(status.expect("grace starts at exit"));
            }
            _ = sleep_until(deadline) => break Ending::TimedOut,
            _ = cancellation.cancelled() => break Ending::Cancelled,
        }
    };

    // Whatever ended the run, nothing of the group outlives it. After a
    // normal exit the leader is already reaped, so in theory its id could
    // have been reused by a new group; pids cycle through millions of values
    // first, and leaving background processes running is the worse risk.
    group.kill();
    // And what left the group (`setsid`, double forks, daemons).
    sweep.sweep_now().await;
    if !matches!(ending, Ending::Exited(_)) {
        let _ = child.start_kill();
        let _ = tokio::time::timeout(DRAIN_AFTER_KILL, child.wait()).await;
        if matches!(ending, Ending::TimedOut | Ending::OutputLimit) {
            // The pipes close with the group; keep what was written before.
            let drain = async {
                while stdout.is_some() || stderr.is_some() {
                    tokio::select! {
                        read = read_some(&mut stdout, &mut out_buf) => match read {
                            Some(n) => out.push(&out_buf[..n]),
                            None => stdout = None,
                        },
                        read = read_some(&mut stderr, &mut err_buf) => match read {
                            Some(n) => err.push(&err_buf[..n]),
                            None => stderr = None,
                        },
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_AFTER_KILL, drain).await;
        }
    }
    Ok(Finished {
        ending,
        stdout: out,
        stderr: err,
        elapsed: started.elapsed(),
    })
}

/// Reads the next chunk of an open stream: `None` at its end (or on a read
/// error, which ends it too). A closed stream never resolves, so its
/// `select!` branch simply stays idle.
async fn read_some<R: AsyncReadExt + Unpin>(
    stream: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    let Some(reader) = stream.as_mut() else {
        return std::future::pending().await;
    };
    match reader.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}
