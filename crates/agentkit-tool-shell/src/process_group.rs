//! Killing a command together with everything it started.
//!
//! Killing the shell alone is not enough: `sh -c 'make test'` leaves `make`
//! and its children running, still writing files and holding the output
//! pipes open. So every command starts as the leader of a new process group
//! and is stopped by signalling the whole group. A guard does this when it
//! is dropped too, so a tool call abandoned by its caller (a dropped future,
//! a loop that gave up) leaves nothing behind.
//!
//! A process that deliberately leaves the group (`setsid`, a daemon that
//! double-forks) is out of reach; that is how a user would start a server
//! meant to outlive the call.

use tokio::process::Child;

/// The process group of a spawned command; kills it when dropped.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    /// The group's id (the leader's pid), if the child was started in its
    /// own group.
    #[cfg_attr(not(unix), allow(dead_code))]
    id: Option<u32>,
}

impl ProcessGroup {
    /// The group led by `child`, which must have been spawned with
    /// `process_group(0)`.
    pub(crate) fn led_by(child: &Child) -> Self {
        Self { id: child.id() }
    }

    /// Sends SIGKILL to every process of the group. A group that is already
    /// gone is not an error.
    pub(crate) fn kill(&self) {
        #[cfg(unix)]
        if let Some(pid) = self
            .id
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            match rustix::process::kill_process_group(pid, rustix::process::Signal::KILL) {
                Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                Err(err) => {
                    tracing::warn!(pgid = pid.as_raw_pid(), %err, "cannot kill process group")
                }
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
