//! Serving a request that landed on the wrong replica.
//!
//! A session is driven by the one replica that holds its lease. When a
//! request for it reaches another replica (a load balancer does not know
//! who holds what), that replica finds the lease taken, and the lease row
//! names its holder: the URL the holder advertised
//! ([`PgStoreBuilder::lease_holder`](agentkit_store::PgStoreBuilder::lease_holder)).
//! Instead of refusing, the replica sends the request, unchanged, to the
//! holder and streams its answer back: the session still runs in one place
//! only, so nothing runs twice.
//!
//! A forwarded request is marked and never forwarded again (a lease that
//! moved meanwhile answers 503 and the client retries). When the holder
//! cannot be reached (it died; its lease has not expired yet) the client
//! gets the 503 with `Retry-After`, and a later try finds the lease expired
//! and the session taken over here.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Marks a request one replica sent another.
pub(crate) const FORWARDED: &str = "x-agentkit-forwarded";

/// Names, on a 503 of a handler, the replica that holds the session. The
/// middleware removes it before the answer leaves the server.
pub(crate) const HOLDER: &str = "x-agentkit-holder";

/// The largest request body a replica keeps to forward (requests are small
/// JSON documents).
const MAX_BODY: usize = 16 << 20;

/// Headers that describe one connection, not the request.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// The middleware: runs the request here, and if the session is held by
/// another replica, forwards it there.
pub(crate) async fn forward(client: reqwest::Client, request: Request, next: Next) -> Response {
    if request.headers().contains_key(FORWARDED) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let (method, uri, headers) = (
        parts.method.clone(),
        parts.uri.clone(),
        parts.headers.clone(),
    );
    let mut response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    let Some(holder) = response
        .headers_mut()
        .remove(HOLDER)
        .and_then(|value| value.to_str().ok().map(str::to_owned))
    else {
        return response;
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut outgoing = client.request(method, format!("{}{path}", holder.trim_end_matches('/')));
    for (name, value) in &headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            outgoing = outgoing.header(name, value);
        }
    }
    let sent = outgoing.header(FORWARDED, "1").body(bytes).send().await;
    match sent {
        Ok(answer) => {
            tracing::debug!(%holder, status = answer.status().as_u16(), "forwarded to the lease holder");
            let mut forwarded = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if !HOP_BY_HOP.contains(&name.as_str()) {
                    forwarded = forwarded.header(name, value);
                }
            }
            forwarded
                .body(Body::from_stream(answer.bytes_stream()))
                .unwrap_or(response)
        }
        Err(err) => {
            tracing::debug!(%holder, %err, "the lease holder cannot be reached");
            response
        }
    }
}

/// The header naming `holder` on a handler's 503.
pub(crate) fn holder_header(holder: &str) -> Option<(HeaderName, HeaderValue)> {
    Some((
        HeaderName::from_static(HOLDER),
        HeaderValue::from_str(holder).ok()?,
    ))
}

/// The advertised URL at the start of a lease owner (`"<url> <token>"`), if
/// the holder advertised one.
pub(crate) fn holder_of(owner: &str) -> Option<&str> {
    let (holder, _) = owner.split_once(' ')?;
    (holder.starts_with("http://") || holder.starts_with("https://")).then_some(holder)
}

#[cfg(test)]
mod tests {
    use super::holder_of;

    #[test]
    fn only_an_advertised_url_is_a_holder() {
        assert_eq!(
            holder_of("http://127.0.0.1:1 lease-x"),
            Some("http://127.0.0.1:1")
        );
        assert_eq!(holder_of("lease-x"), None);
        assert_eq!(holder_of("worker-1 lease-x"), None);
    }
}
