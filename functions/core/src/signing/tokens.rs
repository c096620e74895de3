//! Bearer tokens of readers (DECISIONS §11): today a display's (`displays
//! create` and `rotate` of the admin command), later staff's too. A token is
//! [`TOKEN_BYTES`] random bytes shown once as hex; the stores keep only its
//! SHA-256 ([`token_hash`]), so a leaked table does not let anyone read calls.
//! The HTTP layer looks a presented token up by its hash (`http::displays`).

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::domain::model::{Display, Scope};

/// Random bytes in a token (shown as twice as many hex digits).
pub const TOKEN_BYTES: usize = 32;

/// A fresh token: [`TOKEN_BYTES`] bytes from the OS random source, as
/// lowercase hex.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut token = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut token)?;
    Ok(hex::encode(token))
}

/// What the stores keep of a token: lowercase hex SHA-256 of its text.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new installation display and its token (the token is shown once).
pub fn new_display(
    name: &str,
    sections: &[String],
    now: DateTime<Utc>,
) -> Result<(Display, String), getrandom::Error> {
    let token = new_token()?;
    let display = Display {
        id: uuid::Uuid::new_v4().to_string(),
        name: name.to_string(),
        sections: sections.to_vec(),
        scope: Scope::installation(),
        token_hash: token_hash(&token),
        created_at: now,
        revoked: false,
    };
    Ok((display, token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_only_their_hash_is_kept() {
        let (display, token) = new_display("Flur 1", &[], crate::domain::wire_time::now()).unwrap();
        assert_eq!(token.len(), 2 * TOKEN_BYTES);
        assert!(token.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(display.token_hash, token_hash(&token));
        assert_ne!(display.token_hash, token);
        assert_eq!(display.scope, Scope::installation());
    }

    #[test]
    fn token_hash_is_sha256_hex() {
        // printf abc | sha256sum
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
