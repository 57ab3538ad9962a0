//! Signed JWTs a client presents instead of a secret: `private_key_jwt`
//! client authentication (RFC 7523 section 2.2, OpenID Connect Core 9).
//!
//! A machine client that holds a private key proves who it is with a short
//! JWT it signs for each token request (`iss` and `sub` its client id, `aud`
//! the authorization server's issuer, a fresh `jti`, five minutes of life),
//! so no shared secret ever travels. Signing uses `ring`, which the tree
//! already builds for rustls; a JWT is three base64url parts, so no JWT
//! library is needed on top.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, RsaKeyPair};
use std::time::{SystemTime, UNIX_EPOCH};

/// The JWS algorithm a [`ClientKey`] signs with (the `alg` the
/// authorization server registered for the client, one of its
/// `token_endpoint_auth_signing_alg_values_supported`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JwsAlgorithm {
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// ECDSA with P-384 and SHA-384.
    Es384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// Ed25519.
    EdDsa,
}

impl JwsAlgorithm {
    /// The name JOSE uses (`ES256`, `ES384`, `RS256`, `EdDSA`).
    pub fn name(self) -> &'static str {
        match self {
            JwsAlgorithm::Es256 => "ES256",
            JwsAlgorithm::Es384 => "ES384",
            JwsAlgorithm::Rs256 => "RS256",
            JwsAlgorithm::EdDsa => "EdDSA",
        }
    }
}

impl std::str::FromStr for JwsAlgorithm {
    type Err = ClientKeyError;

    /// Parses a JOSE name such as `ES256`.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        [
            JwsAlgorithm::Es256,
            JwsAlgorithm::Es384,
            JwsAlgorithm::Rs256,
            JwsAlgorithm::EdDsa,
        ]
        .into_iter()
        .find(|alg| alg.name() == name)
        .ok_or_else(|| ClientKeyError::UnsupportedAlgorithm(name.to_owned()))
    }
}

/// Why a private key cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientKeyError {
    /// The text is not a PEM `PRIVATE KEY` (PKCS #8) block.
    #[error("the client key is not a PEM \"PRIVATE KEY\" (PKCS #8) block")]
    NotPkcs8Pem,
    /// The key does not fit the algorithm (a P-256 key for `RS256`, a
    /// malformed key, an RSA key under 2048 bits).
    #[error("the client key is not a valid {0} private key")]
    KeyRejected(&'static str),
    /// An algorithm name this crate does not sign with.
    #[error("unsupported JWS algorithm {0:?} (ES256, ES384, RS256 and EdDSA are)")]
    UnsupportedAlgorithm(String),
}

/// A client's private key for `private_key_jwt` client authentication.
///
/// ```
/// use agentkit_mcp::{ClientKey, ClientKeyError, JwsAlgorithm};
///
/// let err = ClientKey::from_pem(JwsAlgorithm::Es256, "not a key").unwrap_err();
/// assert_eq!(err, ClientKeyError::NotPkcs8Pem);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientKey {
    algorithm: JwsAlgorithm,
    pkcs8: Vec<u8>,
    key_id: Option<String>,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKey")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl ClientKey {
    /// A PKCS #8 private key in PEM (`-----BEGIN PRIVATE KEY-----`), checked
    /// now against `algorithm`.
    pub fn from_pem(algorithm: JwsAlgorithm, pem: &str) -> Result<Self, ClientKeyError> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .skip_while(|line| *line != "-----BEGIN PRIVATE KEY-----")
            .skip(1)
            .take_while(|line| *line != "-----END PRIVATE KEY-----")
            .collect();
        let pkcs8 = STANDARD
            .decode(body.as_bytes())
            .ok()
            .filter(|der| !der.is_empty())
            .ok_or(ClientKeyError::NotPkcs8Pem)?;
        let key = Self {
            algorithm,
            pkcs8,
            key_id: None,
        };
        key.sign(b"probe")?;
        Ok(key)
    }

    /// The `kid` to put in each JWT's header, when the authorization server
    /// knows the client's keys by id.
    pub fn key_id(mut self, kid: impl Into<String>) -> Self {
        self.key_id = Some(kid.into());
        self
    }

    /// The algorithm it signs with.
    pub fn algorithm(&self) -> JwsAlgorithm {
        self.algorithm
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ClientKeyError> {
        let rng = SystemRandom::new();
        let rejected = |_| ClientKeyError::KeyRejected(self.algorithm.name());
        match self.algorithm {
            JwsAlgorithm::Es256 | JwsAlgorithm::Es384 => {
                let alg = if self.algorithm == JwsAlgorithm::Es256 {
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING
                } else {
                    &signature::ECDSA_P384_SHA384_FIXED_SIGNING
                };
                let pair = EcdsaKeyPair::from_pkcs8(alg, &self.pkcs8, &rng).map_err(rejected)?;
                let sig = pair
                    .sign(&rng, message)
                    .map_err(|_| ClientKeyError::KeyRejected(self.algorithm.name()))?;
                Ok(sig.as_ref().to_vec())
            }
            JwsAlgorithm::Rs256 => {
                let pair = RsaKeyPair::from_pkcs8(&self.pkcs8).map_err(rejected)?;
                let mut sig = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut sig)
                    .map_err(|_| ClientKeyError::KeyRejected(self.algorithm.name()))?;
                Ok(sig)
            }
            JwsAlgorithm::EdDsa => {
                let pair =
                    Ed25519KeyPair::from_pkcs8_maybe_unchecked(&self.pkcs8).map_err(rejected)?;
                Ok(pair.sign(message).as_ref().to_vec())
            }
        }
    }

    /// A client assertion for `client_id` addressed to `audience` (the
    /// authorization server's issuer): compact JWS, valid five minutes.
    pub(crate) fn client_assertion(
        &self,
        client_id: &str,
        audience: &str,
    ) -> Result<String, ClientKeyError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut jti = [0u8; 16];
        SystemRandom::new()
            .fill(&mut jti)
            .map_err(|_| ClientKeyError::KeyRejected(self.algorithm.name()))?;
        let mut header = serde_json::json!({ "alg": self.algorithm.name(), "typ": "JWT" });
        if let Some(kid) = &self.key_id {
            header["kid"] = kid.clone().into();
        }
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": URL_SAFE_NO_PAD.encode(jti),
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self.sign(signing_input.as_bytes())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    fn p256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            doc.as_ref(),
            &rng,
        )
        .unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(doc.as_ref())
        );
        (pem, pair.public_key().as_ref().to_vec())
    }

    #[test]
    fn assertions_verify_with_the_public_key_and_carry_the_claims() {
        let (pem, public) = p256_pem();
        let key = ClientKey::from_pem(JwsAlgorithm::Es256, &pem)
            .unwrap()
            .key_id("k1");
        let jwt = key
            .client_assertion("agent-7", "https://as.example")
            .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let signed = format!("{}.{}", parts[0], parts[1]);
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(signed.as_bytes(), &sig)
            .expect("signature verifies");
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "k1");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "agent-7");
        assert_eq!(claims["sub"], "agent-7");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            300
        );
        let again = key
            .client_assertion("agent-7", "https://as.example")
            .unwrap();
        let claims_again: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(again.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_ne!(
            claims["jti"], claims_again["jti"],
            "every assertion is fresh"
        );
    }

    #[test]
    fn keys_that_do_not_fit_are_refused() {
        let (pem, _) = p256_pem();
        assert_eq!(
            ClientKey::from_pem(JwsAlgorithm::Rs256, &pem).unwrap_err(),
            ClientKeyError::KeyRejected("RS256")
        );
        assert_eq!(
            ClientKey::from_pem(JwsAlgorithm::Es384, &pem).unwrap_err(),
            ClientKeyError::KeyRejected("ES384")
        );
        assert_eq!(
            ClientKey::from_pem(
                JwsAlgorithm::Es256,
                "-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----"
            )
            .unwrap_err(),
            ClientKeyError::NotPkcs8Pem
        );
        assert!(
            format!(
                "{:?}",
                ClientKey::from_pem(JwsAlgorithm::Es256, &pem).unwrap()
            )
            .contains("Es256")
        );
        assert_eq!("ES256".parse::<JwsAlgorithm>(), Ok(JwsAlgorithm::Es256));
        assert!(matches!(
            "HS256".parse::<JwsAlgorithm>(),
            Err(ClientKeyError::UnsupportedAlgorithm(_))
        ));
    }
}
