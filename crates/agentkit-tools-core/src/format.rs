//! The string formats a form question's schema may name (MCP's
//! elicitation allows `email`, `uri`, `date` and `date-time`), checked
//! before an answer is sent so the user can correct a value instead of the
//! asker refusing it. The checks are the shape each format's standard
//! gives, not deliverability: an address with a local part, one `@` and a
//! dotted domain; an RFC 3986 scheme followed by `:`; an RFC 3339 full
//! date (real calendar days) and date-time with its offset.

/// `true` when `text` is in `format`; an unknown format is not checked.
pub(crate) fn fits(format: &str, text: &str) -> bool {
    match format {
        "email" => email(text),
        "uri" => uri(text),
        "date" => date(text),
        "date-time" => date_time(text),
        _ => true,
    }
}

fn email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !text.chars().any(char::is_whitespace)
        && !domain.contains('@')
        && domain.contains('.')
        && domain.split('.').all(|label| !label.is_empty())
}

fn uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Digits only, read as a number.
fn digits(text: &str) -> Option<u32> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&text[..4]), digits(&text[5..7]), digits(&text[8..]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `hh:mm:ss` (leap second allowed), optional fraction.
fn time(text: &str) -> bool {
    let (clock, fraction) = match text.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (text, None),
    };
    let bytes = clock.as_bytes();
    if bytes.len() != 8 || bytes[2] != b':' || bytes[5] != b':' {
        return false;
    }
    let (Some(h), Some(m), Some(s)) = (
        digits(&clock[..2]),
        digits(&clock[3..5]),
        digits(&clock[6..]),
    ) else {
        return false;
    };
    let fraction_fits =
        fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    h < 24 && m < 60 && s <= 60 && fraction_fits
}

fn date_time(text: &str) -> bool {
    let Some((day, rest)) = text.split_once(['T', 't']) else {
        return false;
    };
    if !date(day) {
        return false;
    }
    if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        return time(clock);
    }
    // A numeric offset: the last `+` or `-`.
    let Some(at) = rest.rfind(['+', '-']) else {
        return false;
    };
    let (clock, offset) = (&rest[..at], &rest[at + 1..]);
    let bytes = offset.as_bytes();
    time(clock)
        && bytes.len() == 5
        && bytes[2] == b':'
        && digits(&offset[..2]).is_some_and(|h| h < 24)
        && digits(&offset[3..]).is_some_and(|m| m < 60)
}
