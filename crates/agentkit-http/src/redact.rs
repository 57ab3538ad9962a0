//! Keeps credentials out of error messages.
//!
//! A server, a proxy or a gateway may quote the key it was sent back in its
//! answer: in an error body ("Incorrect API key provided: sk-..."), in an
//! error event inside a stream, in a plain JSON error sent with status 200.
//! Whatever that text becomes (a [`ProviderError`](crate::ProviderError), a
//! loop event, a log line, a transcript note), the key must not go with it.
//! [`redact_secrets`] is the one place that removes it: the values the
//! request really carried, and anything shaped like a well-known key.

/// What replaces a removed credential.
pub const REDACTED: &str = "<redacted>";

/// Prefixes of well-known key formats (OpenAI and Anthropic `sk-`, Stripe
/// style `sk_`, Google `AIza`, GitHub `ghp_` and friends, Slack `xox`, AWS
/// access key ids).
const KEY_PREFIXES: [&str; 10] = [
    "sk-",
    "sk_",
    "AIza",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xox",
    "AKIA",
    "ASIA",
];

/// How many key characters must follow a prefix for the word to count as a
/// key (`sk-ant-api03-...` and `sk-proj-...` are far longer; `sk-1` is not
/// a key).
const MIN_KEY_TAIL: usize = 16;

/// Removes every secret value (at least 8 bytes long: shorter values would
/// garble the message) and every key-shaped word from `message`, putting
/// [`REDACTED`] in their place. Returns whether anything was removed.
///
/// ```
/// use agentkit_http::redact_secrets;
///
/// let mut message =
///     "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx.".to_string();
/// assert!(redact_secrets(&mut message, &[] as &[&str]));
/// assert_eq!(message, "Incorrect API key provided: <redacted>.");
///
/// let mut message = "token my-own-gateway-token rejected".to_string();
/// redact_secrets(&mut message, &["my-own-gateway-token"]);
/// assert_eq!(message, "token <redacted> rejected");
/// ```
pub fn redact_secrets(message: &mut String, secrets: &[impl AsRef<str>]) -> bool {
    let mut changed = false;
    for secret in secrets {
        let secret = secret.as_ref().trim();
        if secret.len() >= 8 && message.contains(secret) {
            *message = message.replace(secret, REDACTED);
            changed = true;
        }
    }
    if let Some(cleaned) = without_key_shaped_words(message) {
        *message = cleaned;
        changed = true;
    }
    changed
}

/// The credential carried by a header value: the token of `Bearer <token>`,
/// or the whole value.
pub(crate) fn header_secret(value: &str) -> &str {
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .unwrap_or(value)
        .trim()
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// `message` with its key-shaped words replaced, or `None` if it has none.
fn without_key_shaped_words(message: &str) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < message.len() {
        let rest = &message[at..];
        let starts_word = message[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_key_char(c));
        let prefix = starts_word
            .then(|| KEY_PREFIXES.iter().find(|p| rest.starts_with(**p)))
            .flatten();
        if let Some(prefix) = prefix {
            let word_len = rest.find(|c: char| !is_key_char(c)).unwrap_or(rest.len());
            if word_len >= prefix.len() + MIN_KEY_TAIL {
                out.push_str(&message[copied..at]);
                out.push_str(REDACTED);
                at += word_len;
                copied = at;
                continue;
            }
        }
        at += rest.chars().next().map_or(1, char::len_utf8);
    }
    (copied > 0).then(|| {
        out.push_str(&message[copied..]);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(message: &str, secrets: &[&str]) -> String {
        let mut message = message.to_string();
        redact_secrets(&mut message, secrets);
        message
    }

    #[test]
    fn key_shaped_words_go_and_ordinary_words_stay() {
        // Rows: each key format, at the start, inside quotes, at the end.
        for (message, expected) in [
            (
                "sk-ant-api03-AAAAAAAAAAAAAAAAAAAA is invalid",
                "<redacted> is invalid",
            ),
            (
                r#"{"key":"AIzaSyA-1234567890abcdefghijklmnopq"}"#,
                r#"{"key":"<redacted>"}"#,
            ),
            ("id AKIAIOSFODNN7EXAMPLE", "id <redacted>"),
            ("token ghp_0123456789abcdefABCDEF", "token <redacted>"),
            // Not keys: too short, or the prefix inside a word.
            (
                "task-sk-0123456789abcdefghij",
                "task-sk-0123456789abcdefghij",
            ),
            ("sk-1 is a name", "sk-1 is a name"),
            ("naïve text with no key", "naïve text with no key"),
        ] {
            assert_eq!(redacted(message, &[]), expected, "{message}");
        }
    }

    #[test]
    fn configured_values_go_whatever_their_shape() {
        assert_eq!(
            redacted("gateway said: local-key-31337 denied", &["local-key-31337"]),
            "gateway said: <redacted> denied"
        );
        // Too short to replace safely.
        assert_eq!(redacted("abc denied", &["abc"]), "abc denied");
        assert_eq!(header_secret("Bearer tok-1234"), "tok-1234");
    }
}
