//! A throwaway PostgreSQL server for tests (feature `postgres`): `initdb`
//! into a temporary directory, listening only on a Unix socket in that
//! directory, stopped and deleted when the guard drops. The session store's
//! tests and the server's replica tests share it, and so can a host's.
//!
//! ```no_run
//! let cluster = agentkit_testkit::pg::TempCluster::start();
//! // Hand this to `PgStore::connect`, `tokio-postgres` or `psql`.
//! let conninfo = cluster.conninfo();
//! assert!(conninfo.contains("dbname=postgres"));
//! ```
//!
//! The server binaries come from the system (`cargo xtask fixtures`
//! installs Debian's `postgresql` package when they are missing). If they
//! cannot be found the test fails with a message saying so: it never skips.
//! PostgreSQL refuses to run as root, so under root the cluster is owned by
//! and run as the `postgres` user (created by the Debian package).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running server; dropping it stops the server and deletes its files.
pub struct TempCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as_postgres: bool,
    /// The TCP port on 127.0.0.1 when started with TLS.
    port: Option<u16>,
}

impl TempCluster {
    /// Creates and starts a cluster with a `agentkit` superuser (trust
    /// authentication, reachable only through the socket directory).
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// Starts a cluster that also listens on 127.0.0.1 (TCP, where
    /// PostgreSQL speaks TLS) with this certificate and key (PEM).
    pub fn start_with_tls(cert_pem: &str, key_pem: &str) -> Self {
        Self::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> Self {
        let bin = server_binaries().unwrap_or_else(|| {
            panic!(
                "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or in \
                 /usr/lib/postgresql/*/bin: run `cargo xtask fixtures` to install them \
                 (Debian package `postgresql`)"
            )
        });
        let run_as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("agentkit-pg-")
            .tempdir()
            .expect("a temporary directory for the cluster");
        if run_as_postgres {
            let status = Command::new("chown")
                .arg("postgres:")
                .arg(dir.path())
                .status()
                .expect("chown runs");
            assert!(
                status.success(),
                "cannot hand {} to the postgres user",
                dir.path().display()
            );
        }
        let port = tls.map(|_| {
            // A free port: bound, read, released.
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            probe.local_addr().unwrap().port()
        });
        let cluster = Self {
            dir,
            bin,
            run_as_postgres,
            port,
        };
        let data = cluster.data_dir();
        cluster.run(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-A",
                "trust",
                "-U",
                "agentkit",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let mut options = format!(
            "-c listen_addresses='' -k {} -c fsync=off -c full_page_writes=off",
            cluster.socket_dir().display()
        );
        if let (Some((cert, key)), Some(port)) = (tls, port) {
            let cert_file = cluster.dir.path().join("server.crt");
            let key_file = cluster.dir.path().join("server.key");
            std::fs::write(&cert_file, cert).unwrap();
            std::fs::write(&key_file, key).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
            if cluster.run_as_postgres {
                for file in [&cert_file, &key_file] {
                    let status = Command::new("chown").arg("postgres:").arg(file).status();
                    assert!(
                        status.is_ok_and(|s| s.success()),
                        "chown {}",
                        file.display()
                    );
                }
            }
            options = format!(
                "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c full_page_writes=off \
                 -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                cluster.socket_dir().display(),
                cert_file.display(),
                key_file.display()
            );
        }
        cluster.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data),
                "-o",
                &options,
                "-l",
                path_str(&cluster.dir.path().join("server.log")),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        cluster
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// A connection string for the `postgres` database.
    pub fn conninfo(&self) -> String {
        match self.port {
            // The socket's name carries the port.
            Some(port) => format!(
                "host={} port={port} user=agentkit dbname=postgres",
                self.socket_dir().display()
            ),
            None => format!(
                "host={} user=agentkit dbname=postgres",
                self.socket_dir().display()
            ),
        }
    }

    /// A connection string over TCP to `host` (which must resolve to
    /// 127.0.0.1) with this `sslmode`; only for clusters started with TLS.
    pub fn tcp_conninfo(&self, host: &str, sslmode: &str) -> String {
        let port = self.port.expect("a cluster started with TLS");
        format!("host={host} port={port} user=agentkit dbname=postgres sslmode={sslmode}")
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let program = self.bin.join(program);
        let mut command = if self.run_as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.args(args);
        command
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let output = self
            .command(program, args)
            .output()
            .unwrap_or_else(|err| panic!("cannot run {program}: {err}"));
        if !output.status.success() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            panic!(
                "{program} failed ({}):\n{}{}\n{log}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        output
    }
}

impl Drop for TempCluster {
    fn drop(&mut self) {
        let data = self.data_dir();
        let _ = self
            .command(
                "pg_ctl",
                &["-D", path_str(&data), "-m", "immediate", "-w", "stop"],
            )
            .output();
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// The directory holding `initdb` and `pg_ctl`: PATH first, then Debian's
/// versioned directories, newest first.
fn server_binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    debian.sort_by_key(|dir| {
        std::cmp::Reverse(
            dir.parent()
                .and_then(|v| v.file_name())
                .and_then(|v| v.to_str())
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(0),
        )
    });
    on_path
        .into_iter()
        .chain(debian)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
}
