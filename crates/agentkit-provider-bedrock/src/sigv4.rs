//! AWS Signature Version 4, for signing Bedrock requests.
//!
//! The signature is an HMAC-SHA256 chain: a key derived from the secret,
//! the date, the region and the service signs a string that hashes the
//! canonical request (method, path, query, the signed headers, the body's
//! SHA-256). Only what Bedrock's JSON POSTs need is here: headers given
//! by the caller are signed as they are, lower-cased and sorted.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// AWS credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`). Its `Debug` output hides the secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// The session token of temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// What is signed: a request as it will be sent.
#[derive(Clone, Debug)]
pub struct SignRequest<'a> {
    /// `POST`, `GET` ...
    pub method: &'a str,
    /// The path, already URI-encoded as sent.
    pub path: &'a str,
    /// The query string without `?` (its parameters sorted), or empty.
    pub query: &'a str,
    /// The headers to sign (`host` included), any case.
    pub headers: &'a [(&'a str, &'a str)],
    /// The body.
    pub body: &'a [u8],
}

/// The `Authorization` header for `request`, signed at `amz_date`
/// (`YYYYMMDDTHHMMSSZ`, also sent as `x-amz-date`) for `region` and
/// `service` (`bedrock`).
pub fn authorization(
    credentials: &Credentials,
    request: &SignRequest<'_>,
    amz_date: &str,
    region: &str,
    service: &str,
) -> String {
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    headers.sort();
    let signed: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
    let signed = signed.join(";");
    let canonical_headers: String = headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed}\n{}",
        request.method,
        request.path,
        request.query,
        hex(&Sha256::digest(request.body)),
    );
    let date = &amz_date[..amz_date.len().min(8)];
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let mut key = hmac(
        format!("AWS4{}", credentials.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
        credentials.access_key_id
    )
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `get-vanilla` case of AWS's published SigV4 test suite.
    #[test]
    fn the_published_get_vanilla_case_signs_as_aws_says() {
        let credentials = Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let request = SignRequest {
            method: "GET",
            path: "/",
            query: "",
            headers: &[
                ("Host", "example.amazonaws.com"),
                ("X-Amz-Date", "20150830T123600Z"),
            ],
            body: b"",
        };
        assert_eq!(
            authorization(
                &credentials,
                &request,
                "20150830T123600Z",
                "us-east-1",
                "service"
            ),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        assert!(!format!("{credentials:?}").contains("EXAMPLEKEY"));
    }
}
