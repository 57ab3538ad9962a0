//! Where AWS credentials come from: the standard chain's first two links.
//!
//! First the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`), then the shared credentials file
//! (`AWS_SHARED_CREDENTIALS_FILE`, or `~/.aws/credentials`) under the
//! profile `AWS_PROFILE` names (`default` otherwise). Single sign-on,
//! instance metadata and assumed roles are not read.

use crate::sigv4::Credentials;

/// Credentials from the environment, read through `lookup`; `None` unless
/// both the key id and the secret are set.
pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Option<Credentials> {
    let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    Some(Credentials {
        access_key_id: get("AWS_ACCESS_KEY_ID")?,
        secret_access_key: get("AWS_SECRET_ACCESS_KEY")?,
        session_token: get("AWS_SESSION_TOKEN"),
    })
}

/// Credentials of `profile` in a shared credentials file's text (INI:
/// `[profile]` sections of `key = value` lines, `#` and `;` comments).
pub fn from_profile_file(text: &str, profile: &str) -> Option<Credentials> {
    let (mut section, mut id, mut secret, mut token) = (None, None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(name.trim().trim_start_matches("profile ").to_owned());
            continue;
        }
        if section.as_deref() != Some(profile) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = Some(value.trim().to_owned()).filter(|v| !v.is_empty());
        match key.trim() {
            "aws_access_key_id" => id = value,
            "aws_secret_access_key" => secret = value,
            "aws_session_token" => token = value,
            _ => {}
        }
    }
    Some(Credentials {
        access_key_id: id?,
        secret_access_key: secret?,
        session_token: token,
    })
}

/// The chain: the environment, then the shared credentials file.
pub fn resolve(lookup: impl Fn(&str) -> Option<String>) -> Option<Credentials> {
    if let Some(credentials) = from_env(&lookup) {
        return Some(credentials);
    }
    let path = lookup("AWS_SHARED_CREDENTIALS_FILE")
        .or_else(|| lookup("HOME").map(|home| format!("{home}/.aws/credentials")))?;
    let profile = lookup("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    from_profile_file(&std::fs::read_to_string(path).ok()?, &profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# shared credentials
[default]
aws_access_key_id = AKIADEFAULT
aws_secret_access_key = secret-default

[work]
aws_access_key_id=AKIAWORK
aws_secret_access_key=secret-work
aws_session_token = token-work
; no secret here
[broken]
aws_access_key_id = AKIABROKEN
";

    #[test]
    fn the_environment_wins_then_the_profile_file() {
        let dir = std::env::temp_dir().join(format!("agentkit-bedrock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials");
        std::fs::write(&path, FILE).unwrap();
        let path = path.to_string_lossy().into_owned();
        let vars = |pairs: Vec<(&'static str, String)>| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.clone())
            }
        };
        let env = resolve(vars(vec![
            ("AWS_ACCESS_KEY_ID", "AKIAENV".into()),
            ("AWS_SECRET_ACCESS_KEY", "secret-env".into()),
            ("AWS_SHARED_CREDENTIALS_FILE", path.clone()),
        ]))
        .unwrap();
        assert_eq!(env.access_key_id, "AKIAENV");
        let default = resolve(vars(vec![("AWS_SHARED_CREDENTIALS_FILE", path.clone())])).unwrap();
        assert_eq!(default.access_key_id, "AKIADEFAULT");
        let work = resolve(vars(vec![
            ("AWS_SHARED_CREDENTIALS_FILE", path.clone()),
            ("AWS_PROFILE", "work".into()),
        ]))
        .unwrap();
        assert_eq!(
            (
                work.secret_access_key.as_str(),
                work.session_token.as_deref()
            ),
            ("secret-work", Some("token-work"))
        );
        // A profile without its secret, or none at all, gives nothing.
        for profile in ["broken", "missing"] {
            let none = resolve(vars(vec![
                ("AWS_SHARED_CREDENTIALS_FILE", path.clone()),
                ("AWS_PROFILE", profile.into()),
            ]));
            assert!(none.is_none(), "{profile}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
