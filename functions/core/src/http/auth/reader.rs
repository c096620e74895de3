//! Who may read open calls (DECISIONS §11): registered displays with a
//! bearer token, and in sandbox mode the test page's visitor (its cookie);
//! on the live socket also staff with theirs (DECISIONS §14).

use http::HeaderMap;

use crate::app::AppState;
use crate::domain::alarm::Staff;
use crate::domain::model::{Consumer, Display, Scope, sections_show};
use crate::http::error::ApiError;
use crate::http::io::ApiRequest;
use crate::signing::tokens::token_hash;

use super::bearer_token;
use super::staff::staff_by_token;
use super::visitor::{consumer_by_proof, consumer_from_cookie};

/// An authenticated reader: whose calls it sees and which sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    /// The display's id; `None` for the sandbox visitor (no record) and staff.
    pub display_id: Option<String>,
    /// The staff member's id on a staff page's live socket: it gets the
    /// staff pages' messages and those addressed to them.
    pub staff_id: Option<String>,
    /// Who it is, in words: the display's name (its page shows it), the staff
    /// member's, or `Sandbox` for the test page's visitor.
    pub name: String,
    /// Whose calls and elements it reads.
    pub scope: Scope,
    /// Empty = every section.
    pub sections: Vec<String>,
}

impl Reader {
    fn from_display(display: Display) -> Reader {
        Reader {
            display_id: Some(display.id),
            staff_id: None,
            name: display.name,
            scope: display.scope,
            sections: display.sections,
        }
    }

    /// The test page's visitor: every section of their own scope.
    fn sandbox_visitor(consumer: &Consumer) -> Reader {
        Reader {
            display_id: None,
            staff_id: None,
            name: "Sandbox".to_string(),
            scope: Scope::consumer(&consumer.id),
            sections: Vec::new(),
        }
    }

    /// A staff member: every section of their scope (their page picks).
    fn staff(staff: Staff) -> Reader {
        Reader {
            display_id: None,
            staff_id: Some(staff.id),
            name: staff.name,
            scope: staff.scope,
            sections: Vec::new(),
        }
    }

    /// Whether this reader sees a call of `section` ([`sections_show`]).
    pub fn sees_section(&self, section: Option<&str>) -> bool {
        sections_show(&self.sections, section)
    }
}

/// The reader of an HTTP request: the display of `Authorization: Bearer`,
/// else in sandbox mode the test page's visitor (its cookie).
pub(crate) async fn display_reader(
    state: &AppState,
    request: &ApiRequest,
) -> Result<Reader, ApiError> {
    let reader = reader_of(state, bearer_token(request.headers()), request.headers()).await?;
    super::Authenticated::mark(request);
    Ok(reader)
}

/// A reader by `token` (from the header or, on the live socket, the query),
/// else in sandbox mode by the test page's cookie.
async fn reader_of(
    state: &AppState,
    token: Option<&str>,
    headers: &HeaderMap,
) -> Result<Reader, ApiError> {
    if let Some(token) = token {
        let display = state
            .store
            .display_by_token_hash(&token_hash(token))
            .await?;
        return reader_of_display(display);
    }
    if state.is_sandbox()
        && let Some(consumer) = consumer_from_cookie(state, headers).await?
    {
        return Ok(Reader::sandbox_visitor(&consumer));
    }
    Err(ApiError::Unauthorized)
}

/// The sandbox visitor's proof on the live socket: `consumer` and `hash`
/// (the proof of DECISIONS §8), for a socket on another host than the page
/// (the WebSocket API in AWS), which the page's cookie does not reach.
#[derive(Debug, Clone, Copy)]
pub struct SandboxProof<'a> {
    /// The visitor's consumer id (the socket's `consumer` query parameter).
    pub consumer: &'a str,
    /// Hex HMAC of that id with the consumer's secret (the `hash` query
    /// parameter), as the test page's cookie holds it.
    pub hash: &'a str,
}

/// The reader of a live socket (DECISIONS §11): the display token or a
/// staff member's (DECISIONS §14), else in sandbox mode the visitor's proof,
/// else the page's cookie. The same 401 for anything missing, unknown or
/// revoked.
pub async fn live_reader(
    state: &AppState,
    token: Option<&str>,
    proof: Option<SandboxProof<'_>>,
    headers: &HeaderMap,
) -> Result<Reader, ApiError> {
    if token.is_none()
        && state.is_sandbox()
        && let Some(proof) = proof
    {
        return match consumer_by_proof(state, proof.consumer, proof.hash).await? {
            Some(consumer) => Ok(Reader::sandbox_visitor(&consumer)),
            None => {
                tracing::warn!("sandbox proof refused on the live socket");
                Err(ApiError::Unauthorized)
            }
        };
    }
    if let Some(token) = token {
        // One look-up each: a display's token, else a staff member's.
        let display = state
            .store
            .display_by_token_hash(&token_hash(token))
            .await?;
        if display.is_none()
            && let Some(staff) = staff_by_token(state, token).await?
        {
            return Ok(Reader::staff(staff));
        }
        return reader_of_display(display);
    }
    reader_of(state, token, headers).await
}

/// Whether `token`, which opened a live socket, still names a display or a
/// staff member that is not revoked (DECISIONS §20: a rotated or revoked
/// credential's open sockets are closed within 5 s). A store error keeps
/// the socket (logged): a hiccup must not drop every page at once.
pub async fn live_token_holds(state: &AppState, token: &str) -> bool {
    // The same look-ups as the socket's connect: a display's token, else a
    // staff member's.
    match live_reader(state, Some(token), None, &HeaderMap::new()).await {
        Ok(_) => true,
        Err(ApiError::Unauthorized) => false,
        Err(error) => {
            tracing::warn!(code = error.code(), "live socket's token not checked again");
            true
        }
    }
}

/// The reader of the display a token named: a revoked or unknown one is 401.
fn reader_of_display(display: Option<Display>) -> Result<Reader, ApiError> {
    match display {
        Some(display) if !display.revoked => Ok(Reader::from_display(display)),
        Some(revoked) => {
            tracing::warn!(display_id = %revoked.id, "revoked display token refused");
            Err(ApiError::Unauthorized)
        }
        None => {
            tracing::warn!("unknown display token refused");
            Err(ApiError::Unauthorized)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_filter_calls_but_never_hide_a_call_without_section() {
        let reader = Reader {
            display_id: None,
            staff_id: None,
            name: String::new(),
            scope: Scope::installation(),
            sections: vec!["A".into()],
        };
        assert!(reader.sees_section(Some("A")));
        assert!(!reader.sees_section(Some("B")));
        assert!(reader.sees_section(None));
    }
}
