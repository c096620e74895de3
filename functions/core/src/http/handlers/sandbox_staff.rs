//! The test page's staff (DECISIONS §8, §14): a sandbox visitor creates
//! staff of their own scope, at most [`Staff::SANDBOX_LIMIT`], and gets each
//! one's token once with the link of the staff page (`/staff#token=…`), so
//! that an integrator can try the whole path: open a call, sign a person on
//! with the staff API, watch the alarm on the display, accept it.
//!
//! `POST /api/v1/sandbox/staff {"name":"Anna","groups":["Leitung"]}` with the
//! page's cookie (or `?consumer=…&hash=…` as `GET /api/v1/sandbox/state`):
//! 201 with the person and the token. Only the token's SHA-256 is kept, as
//! for every staff member; the token is in no log line. The visitor's staff
//! expire with the visitor (30 days, DECISIONS §8).

use serde::Serialize;
use serde_json::Value;

use crate::app::AppState;
use crate::clock;
use crate::domain::alarm::Staff;
use crate::domain::model::Scope;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::validation::{FieldErrors, message, required_text};
use crate::signing::tokens::{new_staff, staff_page_link};
use crate::wire::success;

/// Most groups one sandbox staff member may have.
const MAX_GROUPS: usize = 10;

/// The refusal beyond [`Staff::SANDBOX_LIMIT`], keyed `staff`.
pub(crate) fn limit_message() -> String {
    format!(
        "Es können höchstens {} Mitarbeitende je Testzugang angelegt werden.",
        Staff::SANDBOX_LIMIT
    )
}

/// `POST /api/v1/sandbox/staff`.
pub(crate) async fn create(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let consumer = auth::sandbox_visitor(state, request).await?;
    let envelope = crate::http::handlers::envelope(request)?;
    let (name, groups) = fields(envelope.get("name"), envelope.get("groups"))?;
    let store = state.alarms.as_ref().ok_or(ApiError::Internal)?;
    let scope = Scope::consumer(&consumer.id);
    let (staff, token) =
        new_staff(&scope, &name, &groups, None, clock::now()).map_err(|_| ApiError::Internal)?;
    // Counted in the write: visitors' requests at once never pass the limit.
    if !store
        .create_staff_within(&staff, Staff::SANDBOX_LIMIT)
        .await?
    {
        let mut errors = FieldErrors::new();
        errors.add("staff", limit_message());
        return Err(errors.into());
    }
    tracing::info!(consumer = %consumer.id, staff_id = %staff.id, "sandbox staff created");
    #[derive(Serialize)]
    struct Issued<'a> {
        id: &'a str,
        name: &'a str,
        groups: &'a [String],
        token: &'a str,
        page: String,
    }
    Ok(json_response(
        201,
        success(&Issued {
            id: &staff.id,
            name: &staff.name,
            groups: &staff.groups,
            token: &token,
            page: staff_page_link(&token),
        }),
    ))
}

/// `name` (required text) and `groups` (absent, `null`, or a list of texts;
/// duplicates dropped), with every field error at once.
fn fields(name: Option<&Value>, groups: Option<&Value>) -> Result<(String, Vec<String>), ApiError> {
    let mut errors = FieldErrors::new();
    let name = required_text(&mut errors, "name", name).map(|n| n.trim().to_string());
    let mut kept: Vec<String> = Vec::new();
    match groups {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) if items.len() > MAX_GROUPS => {
            errors.add("groups", message::max_items("groups", MAX_GROUPS));
        }
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                let key = format!("groups.{index}");
                if let Some(group) = required_text(&mut errors, &key, Some(item)) {
                    let group = group.trim().to_string();
                    if !kept.contains(&group) {
                        kept.push(group);
                    }
                }
            }
        }
        Some(_) => errors.add("groups", "groups muss ein Array sein.".to_string()),
    }
    Ok(errors.into_result((name.unwrap_or_default(), kept))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(name: Value, groups: Value) -> String {
        match fields(Some(&name), Some(&groups)) {
            Err(ApiError::Validation(errors)) => serde_json::to_string(&errors).unwrap(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn names_and_groups_are_checked_at_once() {
        assert_eq!(
            fields(
                Some(&json!(" Anna ")),
                Some(&json!(["Leitung", " Leitung", "Technik"]))
            )
            .unwrap(),
            (
                "Anna".to_string(),
                vec!["Leitung".to_string(), "Technik".to_string()]
            )
        );
        assert_eq!(
            fields(Some(&json!("Ben")), None).unwrap().1,
            Vec::<String>::new()
        );
        assert_eq!(
            refused(json!(" "), json!("Leitung")),
            r#"{"name":["name muss ausgefüllt werden."],"groups":["groups muss ein Array sein."]}"#
        );
        assert_eq!(
            refused(json!("A\u{7}"), json!(["", 3])),
            r#"{"name":["name darf keine Steuerzeichen enthalten."],"groups.0":["groups.0 muss ausgefüllt werden."],"groups.1":["groups.1 muss eine Zeichenkette sein."]}"#
        );
        assert!(refused(json!("A"), json!(vec!["g"; 11])).contains("maximal 10 Elemente"));
    }

    #[test]
    fn the_limit_is_named() {
        assert_eq!(
            limit_message(),
            "Es können höchstens 20 Mitarbeitende je Testzugang angelegt werden."
        );
    }
}
