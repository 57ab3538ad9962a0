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

/// The live processes whose command line contains `marker`.
#[allow(dead_code)] // Not every test file that shares this module uses it.
pub fn with_marker(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.windows(marker.len()).any(|w| w == marker.as_bytes()))
                && !is_dead(pid)
        })
        .collect()
}

/// Waits up to a minute for every process carrying `marker` to be gone;
/// panics naming the `row` if one survives.
#[allow(dead_code)] // Not every test file that shares this module uses it.
pub async fn assert_none_left(row: &str, marker: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left = with_marker(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < until, "{row}: {left:?} survived the call");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
