//! `POST /api/v1/element` (spec 4.2): battery, position and reachability of one
//! element (single form) or of many at once (multi form, all or nothing).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::app::AppState;
use crate::clock;
use crate::domain::model::ElementChange;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::parse::{ElementRequest, StatusFields, parse_element};
use crate::request::validation::{FieldErrors, message};
use crate::store::{ElementBatch, ElementsOutcome};
use crate::wire::{ElementRecord, success};

pub(crate) async fn handle(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let envelope = super::envelope(request)?;
    let parsed = parse_element(&envelope)?;
    let consumer = super::signed_consumer(state, request, parsed.credentials()).await?;
    let scope = state.scope_for(&consumer);
    let now = clock::now();

    let items: Vec<(&str, &StatusFields)> = match &parsed {
        ElementRequest::Single { target, status, .. } => vec![(target.as_str(), status)],
        ElementRequest::Multi { items, .. } => items
            .iter()
            .map(|(target, status)| (target.as_str(), status))
            .collect(),
    };
    let batch = ElementBatch {
        scope: scope.clone(),
        changes: merge_by_address(&items, now),
        policy: state.element_policy(),
    };
    let elements = match state.store.update_elements(&batch).await? {
        ElementsOutcome::Updated(elements) => {
            state.publish_elements(&scope, &elements);
            elements
        }
        ElementsOutcome::Unknown(unknown) => {
            return Err(unknown_targets(&parsed, &items, &unknown).into());
        }
    };
    tracing::info!(
        consumer = %consumer.id,
        elements = elements.len(),
        multi = matches!(parsed, ElementRequest::Multi { .. }),
        "elements updated"
    );
    let zone = state.settings.time_zone;
    let body = match parsed {
        ElementRequest::Single { .. } => success(&ElementRecord::new(&elements[0], zone)),
        ElementRequest::Multi { .. } => {
            let records: Vec<ElementRecord<'_>> = elements
                .iter()
                .map(|e| ElementRecord::new(e, zone))
                .collect();
            success(&records)
        }
    };
    Ok(json_response(200, body))
}

/// One change per address, in the order addresses first appear; items for the
/// same target merge in order, later values winning (DECISIONS §6).
fn merge_by_address(
    items: &[(&str, &StatusFields)],
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<ElementChange> {
    let mut changes: Vec<ElementChange> = Vec::with_capacity(items.len());
    // Address → its change in `changes` (a search per item was quadratic).
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for &(target, status) in items {
        let change = ElementChange {
            address: target.to_string(),
            battery: status.battery,
            position: status.position.clone(),
            reachable: status.reachable,
            at,
        };
        match index.entry(target) {
            Entry::Occupied(existing) => changes[*existing.get()].merge(&change),
            Entry::Vacant(slot) => {
                slot.insert(changes.len());
                changes.push(change);
            }
        }
    }
    changes
}

/// 422 for targets that are not registered (production): `address` in the
/// single form, `data.<index>.address` for each such item of the multi form.
fn unknown_targets(
    parsed: &ElementRequest,
    items: &[(&str, &StatusFields)],
    unknown: &[String],
) -> FieldErrors {
    let mut errors = FieldErrors::new();
    match parsed {
        ElementRequest::Single { .. } => errors.add("address", message::invalid_choice("address")),
        ElementRequest::Multi { .. } => {
            for (index, (target, _)) in items.iter().enumerate() {
                if unknown.iter().any(|u| u == target) {
                    let key = format!("data.{index}.address");
                    errors.add(&key, message::invalid_choice(&key));
                }
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_items_of_one_address_in_order_keeping_first_appearance() {
        let at = chrono::Utc::now();
        let a1 = StatusFields {
            battery: Some(10.0),
            position: Some("x".into()),
            reachable: None,
        };
        let b = StatusFields {
            reachable: Some(true),
            ..StatusFields::default()
        };
        let a2 = StatusFields {
            battery: Some(20.0),
            ..StatusFields::default()
        };
        let changes = merge_by_address(&[("A", &a1), ("B", &b), ("A", &a2)], at);
        let summary: Vec<_> = changes
            .iter()
            .map(|c| {
                (
                    c.address.as_str(),
                    c.battery,
                    c.position.as_deref(),
                    c.reachable,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("A", Some(20.0), Some("x"), None),
                ("B", None, None, Some(true))
            ]
        );
    }
}
