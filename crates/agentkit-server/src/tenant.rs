//! Tenants: who a request comes from, and which sessions are theirs.
//!
//! Every request carries `Authorization: Bearer <token>`; the token names a
//! tenant. A session's id in the store is `<tenant>~<thread id>`, built from
//! the *authenticated* tenant, never from anything the client sends: a
//! tenant cannot even name another tenant's session, so asking for it finds
//! nothing (404) rather than something forbidden.

use crate::ServerError;
use agentkit_core::SessionId;
use axum::http::HeaderMap;
use std::collections::HashMap;

/// The separator between tenant and thread id in store ids.
const SEPARATOR: char = '~';

/// An authenticated tenant's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tenant(pub(crate) String);

impl Tenant {
    /// The tenant's name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The store id of this tenant's thread `thread_id`; a thread id that
    /// is not a plain name (letters, digits, `-`, `_`, `.`; 1 to 128
    /// characters) is refused.
    pub(crate) fn session_id(&self, thread_id: &str) -> Result<SessionId, ServerError> {
        if !is_name(thread_id) {
            return Err(ServerError::BadRequest(format!(
                "thread id `{}` must be 1 to 128 letters, digits, `-`, `_` or `.`",
                thread_id.chars().take(140).collect::<String>()
            )));
        }
        Ok(SessionId::new(format!("{}{SEPARATOR}{thread_id}", self.0)))
    }

    /// The thread id of a store id, if the session is this tenant's.
    pub(crate) fn thread_of<'a>(&self, id: &'a SessionId) -> Option<&'a str> {
        let (tenant, thread) = id.as_str().split_once(SEPARATOR)?;
        (tenant == self.0).then_some(thread)
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The configured tokens.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tenants {
    by_token: HashMap<String, Tenant>,
}

impl Tenants {
    /// Adds a tenant; the name must be a plain name (see
    /// [`Tenant::session_id`]) and the token non-empty.
    pub(crate) fn add(&mut self, token: String, name: String) -> Result<(), String> {
        if !is_name(&name) {
            return Err(format!("tenant name `{name}` is not a plain name"));
        }
        if token.is_empty() {
            return Err(format!("tenant `{name}` has an empty token"));
        }
        self.by_token.insert(token, Tenant(name));
        Ok(())
    }

    /// `true` when no tenant was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }

    /// The tenant a request authenticates as.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<Tenant, ServerError> {
        let value = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or(ServerError::Unauthorized)?;
        let (scheme, token) = value.split_once(' ').ok_or(ServerError::Unauthorized)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(ServerError::Unauthorized);
        }
        self.by_token
            .get(token.trim())
            .cloned()
            .ok_or(ServerError::Unauthorized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_cannot_name_another_tenants_session() {
        let a = Tenant("a".into());
        // Attempts to reach tenant b's thread `x` through tenant a's id space.
        for attempt in ["b~x", "../b~x", "", "x/y", "x y", &"x".repeat(129)] {
            assert!(a.session_id(attempt).is_err(), "{attempt:?} was accepted");
        }
        let id = a.session_id("x").unwrap();
        assert_eq!(id.as_str(), "a~x");
        assert_eq!(a.thread_of(&id), Some("x"));
        assert_eq!(Tenant("b".into()).thread_of(&id), None);
        assert_eq!(Tenant("a~".into()).thread_of(&SessionId::new("a~~x")), None);
    }

    #[test]
    fn tokens_authenticate() {
        let mut tenants = Tenants::default();
        tenants.add("secret-a".into(), "a".into()).unwrap();
        assert!(tenants.add("t".into(), "a~b".into()).is_err());
        assert!(tenants.add(String::new(), "c".into()).is_err());
        let headers = |value: &str| {
            let mut map = HeaderMap::new();
            map.insert(axum::http::header::AUTHORIZATION, value.parse().unwrap());
            map
        };
        assert_eq!(
            tenants
                .authenticate(&headers("Bearer secret-a"))
                .unwrap()
                .name(),
            "a"
        );
        for bad in ["Bearer secret-b", "Basic secret-a", "secret-a", "Bearer "] {
            assert!(tenants.authenticate(&headers(bad)).is_err(), "{bad}");
        }
        assert!(tenants.authenticate(&HeaderMap::new()).is_err());
    }
}
