//! The Standard Webhooks headers of one attempt (standardwebhooks.com;
//! DECISIONS §16), made by the reference library (`standardwebhooks`), not
//! by hand: `webhook-id` (the event's, the same on every retry),
//! `webhook-timestamp` (this attempt's Unix seconds) and `webhook-signature`
//! (`v1,<base64 HMAC-SHA256 over id.timestamp.body>`, one per active secret,
//! space-separated, so that a receiver still holding the old secret during
//! a rotation verifies as well as one with the new).

use standardwebhooks::Webhook;

/// The three headers of an attempt, in the library's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SignedHeaders {
    pub id: String,
    pub timestamp: i64,
    pub signature: String,
}

impl SignedHeaders {
    /// As name and value pairs, for any HTTP client.
    pub(crate) fn pairs(&self) -> [(&'static str, String); 3] {
        [
            (standardwebhooks::HEADER_WEBHOOK_ID, self.id.clone()),
            (
                standardwebhooks::HEADER_WEBHOOK_TIMESTAMP,
                self.timestamp.to_string(),
            ),
            (
                standardwebhooks::HEADER_WEBHOOK_SIGNATURE,
                self.signature.clone(),
            ),
        ]
    }
}

/// Why an attempt could not be signed: a stored secret that is not base64
/// (a hand edit), or none at all. Never holds the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SigningError {
    #[error("the endpoint has no active secret")]
    NoSecret,
    #[error("secret {position} of the endpoint is not a whsec_ base64 secret")]
    BadSecret { position: usize },
}

/// Signs `body` of event `id` at `timestamp` with every secret in `secrets`.
pub(crate) fn sign(
    id: &str,
    timestamp: i64,
    body: &str,
    secrets: &[String],
) -> Result<SignedHeaders, SigningError> {
    if secrets.is_empty() {
        return Err(SigningError::NoSecret);
    }
    let mut signatures = Vec::with_capacity(secrets.len());
    for (index, secret) in secrets.iter().enumerate() {
        let bad = || SigningError::BadSecret {
            position: index + 1,
        };
        let signer = Webhook::new(secret).map_err(|_| bad())?;
        signatures.push(
            signer
                .sign(id, timestamp, body.as_bytes())
                .map_err(|_| bad())?,
        );
    }
    Ok(SignedHeaders {
        id: id.to_string(),
        timestamp,
        signature: signatures.join(" "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::secrets::new_webhook_secret;
    use http::{HeaderMap, HeaderName, HeaderValue};

    fn headers(signed: &SignedHeaders) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in signed.pairs() {
            map.insert(
                HeaderName::from_static(name),
                HeaderValue::from_str(&value).unwrap(),
            );
        }
        map
    }

    /// The real time: the reference library refuses a timestamp more than
    /// five minutes from its own clock.
    fn now() -> i64 {
        crate::clock::now().timestamp()
    }

    #[test]
    fn a_receiver_with_the_library_verifies_it_and_refuses_a_tampered_body() {
        let secret = new_webhook_secret().unwrap();
        let body = r#"{"type":"call.alert","timestamp":"2026-11-26T07:00:00.000Z","data":{}}"#;
        let signed = sign("msg_1", now(), body, std::slice::from_ref(&secret)).unwrap();
        let receiver = Webhook::new(&secret).unwrap();
        receiver
            .verify(body.as_bytes(), &headers(&signed))
            .expect("verifies");
        let tampered = body.replace("call.alert", "call.closed");
        assert!(
            receiver
                .verify(tampered.as_bytes(), &headers(&signed))
                .is_err()
        );
        let stale = sign("msg_1", now() - 600, body, &[secret]).unwrap();
        assert!(
            receiver.verify(body.as_bytes(), &headers(&stale)).is_err(),
            "a timestamp ten minutes old is refused"
        );
    }

    #[test]
    fn during_a_rotation_either_secret_verifies() {
        let (old, new) = (new_webhook_secret().unwrap(), new_webhook_secret().unwrap());
        let body = "{}";
        let signed = sign("msg_2", now(), body, &[old.clone(), new.clone()]).unwrap();
        assert_eq!(signed.signature.split(' ').count(), 2);
        for secret in [&old, &new] {
            Webhook::new(secret)
                .unwrap()
                .verify(body.as_bytes(), &headers(&signed))
                .expect("either secret verifies");
        }
        let stranger = new_webhook_secret().unwrap();
        assert!(
            Webhook::new(&stranger)
                .unwrap()
                .verify(body.as_bytes(), &headers(&signed))
                .is_err()
        );
    }

    #[test]
    fn a_broken_secret_is_named_by_position_never_shown() {
        let good = new_webhook_secret().unwrap();
        let error = sign("msg_3", now(), "{}", &[good, "whsec_not base64!".into()]).unwrap_err();
        assert_eq!(error, SigningError::BadSecret { position: 2 });
        assert!(!error.to_string().contains("not base64!"));
        assert_eq!(sign("msg_3", now(), "{}", &[]), Err(SigningError::NoSecret));
    }
}
