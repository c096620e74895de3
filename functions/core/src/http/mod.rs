//! The API over HTTP, shared by the Lambda functions and the local server:
//! request and response shapes ([`io`]), every error and its body
//! ([`error`]), who is asking ([`auth`]: the one door for signatures,
//! tokens and the sandbox's visitor), which path is which endpoint
//! ([`endpoint`]), which handler serves it ([`routes`]) and how a request is
//! served by them ([`router`]), and one handler per endpoint ([`handlers`]),
//! the three pages' among them, with the script helpers the pages share
//! ([`page_helpers`]) and their HTML, JS and icons in `assets/`.

pub(crate) mod auth;
pub(crate) mod endpoint;
pub(crate) mod error;
pub(crate) mod handlers;
pub(crate) mod io;
pub(crate) mod page_helpers;
pub(crate) mod router;
pub mod routes;
