//! `cargo xtask miri`: the tests of the workspace's only `unsafe` code
//! (agentkit-tools-core's `owned_call`, a tool's future held beside the
//! `Arc` it borrows) under Miri, which reports a use after free or an
//! aliasing violation the ordinary tests cannot see.
//!
//! Not part of `ci`: Miri needs the nightly toolchain, and only stable is
//! guaranteed on a fresh machine. This command installs what it needs
//! through rustup (the nightly toolchain's minimal profile with the `miri`
//! and `rust-src` components) and fails loudly when it cannot.

use crate::run::workspace_root;
use std::process::Command;

/// The test targets that exercise `unsafe` code, as `(package, test)`.
const TARGETS: &[(&str, &str)] = &[("agentkit-tools-core", "owned_call")];

/// Installs Miri when missing, then runs each target under it, with the
/// default (stacked) borrows model and again with tree borrows.
pub fn run() -> Result<(), String> {
    rustup(
        &[
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
            "--component",
            "miri",
            "--component",
            "rust-src",
        ],
        "",
    )?;
    for flags in ["", "-Zmiri-tree-borrows"] {
        for (package, test) in TARGETS {
            rustup(
                &[
                    "run", "nightly", "cargo", "miri", "test", "-p", package, "--test", test,
                ],
                flags,
            )?;
        }
    }
    Ok(())
}

/// `rustup ARGS` in the workspace root, with `MIRIFLAGS` set to `miri_flags`.
fn rustup(args: &[&str], miri_flags: &str) -> Result<(), String> {
    let shown = format!("MIRIFLAGS={miri_flags:?} rustup {}", args.join(" "));
    println!("    $ {shown}");
    let status = Command::new("rustup")
        .args(args)
        .env("MIRIFLAGS", miri_flags)
        .current_dir(workspace_root())
        .status()
        .map_err(|err| {
            format!(
                "could not start rustup (Miri needs it to install the nightly toolchain): {err}"
            )
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed: {status}"))
    }
}
