//! `GET /api/v1/openapi.json`: the interface document, `docs/openapi.yaml`
//! as JSON. The JSON beside this file is generated from the YAML and checked
//! in (a YAML parser in the build would add a minute to a newcomer's first
//! build); `tests/openapi_json.rs` fails when the two differ and says how to
//! regenerate it, so every function serves the document of its code.

use crate::http::io::{ApiResponse, json_response};

/// The document as served: `openapi.json`, generated from `docs/openapi.yaml`.
pub const DOCUMENT: &str = include_str!("openapi.json");

pub(crate) fn document() -> ApiResponse {
    json_response(200, DOCUMENT.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::http::endpoint::Endpoint;

    /// The live socket is the local server's own route (in AWS a WebSocket
    /// API), not an [`Endpoint`].
    const LIVE: &str = "/api/v1/display/live";

    #[test]
    fn the_document_has_exactly_the_endpoints_of_the_router() {
        let document: serde_json::Value = serde_json::from_str(DOCUMENT).expect("JSON");
        assert_eq!(document["openapi"], "3.1.0");
        let paths = document["paths"].as_object().expect("paths");
        for endpoint in Endpoint::ALL {
            let methods = paths
                .get(endpoint.path())
                .and_then(|item| item.as_object())
                .unwrap_or_else(|| panic!("{} is not in docs/openapi.yaml", endpoint.path()));
            let mut documented: Vec<String> = methods.keys().cloned().collect();
            let mut served: Vec<String> = endpoint
                .methods()
                .iter()
                .map(|method| method.as_str().to_ascii_lowercase())
                .collect();
            documented.sort();
            served.sort();
            assert_eq!(
                documented,
                served,
                "{}: one operation per method of the router",
                endpoint.path()
            );
        }
        for path in paths.keys() {
            assert!(
                path == LIVE || Endpoint::from_path(path).is_some(),
                "{path} is documented but no endpoint"
            );
        }
    }
}
