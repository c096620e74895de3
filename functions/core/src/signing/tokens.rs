//! Bearer tokens of readers (DECISIONS §11, §14): a display's (`displays
//! create` and `rotate` of the admin command) and a staff member's (`staff
//! create` and `rotate`, the test page's staff). A token is
//! [`TOKEN_BYTES`] random bytes shown once as hex; the stores keep only its
//! SHA-256 ([`token_hash`]), so a leaked table does not let anyone read calls.
//! The HTTP layer looks a presented token up by its hash (`http::auth`).

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::domain::alarm::Staff;
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

/// A new staff member of `scope` and their token (the token is shown once,
/// with the link `/staff#token=…`).
pub fn new_staff(
    scope: &Scope,
    name: &str,
    groups: &[String],
    device: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(Staff, String), getrandom::Error> {
    let token = new_token()?;
    let staff = Staff {
        id: uuid::Uuid::new_v4().to_string(),
        scope: scope.clone(),
        name: name.to_string(),
        groups: groups.to_vec(),
        device: device.map(str::to_string),
        token_hash: token_hash(&token),
        created_at: now,
        revoked: false,
    };
    Ok((staff, token))
}

/// The staff page's link for `token`: the token rides in the fragment, which
/// the browser never sends to a server (so it is in no log).
pub fn staff_page_link(token: &str) -> String {
    format!("/staff#token={token}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_only_their_hash_is_kept() {
        let (display, token) = new_display("Flur 1", &[], crate::clock::now()).unwrap();
        assert_eq!(token.len(), 2 * TOKEN_BYTES);
        assert!(token.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(display.token_hash, token_hash(&token));
        assert_ne!(display.token_hash, token);
        assert_eq!(display.scope, Scope::installation());
    }

    #[test]
    fn staff_get_a_token_of_which_only_the_hash_is_kept() {
        let scope = Scope::consumer("6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f");
        let groups = vec!["Leitung".to_string()];
        let now = crate::clock::now();
        let (staff, token) = new_staff(&scope, "Anna", &groups, Some("DECT 4711"), now).unwrap();
        assert_eq!(token.len(), 2 * TOKEN_BYTES);
        assert_eq!(staff.token_hash, token_hash(&token));
        assert_eq!(
            (
                staff.scope,
                staff.name.as_str(),
                staff.groups,
                staff.device.as_deref()
            ),
            (scope, "Anna", groups, Some("DECT 4711"))
        );
        assert!(crate::request::validation::is_uuid(&staff.id) && !staff.revoked);
        assert_eq!(staff_page_link("ab12"), "/staff#token=ab12");
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
