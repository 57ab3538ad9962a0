//! Process checks shared by the shell tests.

use std::time::{Duration, Instant};

/// `true` once `pid` is gone. A zombie counts as gone: it was killed and
/// only waits for whoever inherited it to reap it. Where there is no /proc,
/// `kill -0` answers (and cannot tell a zombie apart).
pub fn is_dead(pid: u32) -> bool {
    if !std::path::Path::new("/proc/self/stat").exists() {
        return !std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to thirty seconds (a busy machine is slow to reap) for `pid`
/// to die; panics if it does not.
#[allow(dead_code)] // Not every test file that shares this module uses it.
pub async fn assert_dies(pid: u32) {
    let until = Instant::now() + Duration::from_secs(30);
    while !is_dead(pid) {
        assert!(Instant::now() < until, "process {pid} survived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
