//! The API over HTTP, shared by the Lambda functions and the local server:
//! request and response shapes ([`io`]), every error and its body
//! ([`error`]), which path is which endpoint ([`endpoint`]), which handler
//! serves it ([`routes`]) and how a request is served by them ([`router`]),
//! one handler per endpoint ([`handlers`]), who may read as a display
//! ([`displays`]), and the
//! three pages: the sandbox's test page ([`sandbox`], its visitors' staff in
//! [`sandbox_staff`]), the corridor display ([`display_page`]) and the staff's
//! phone app ([`staff_page`]), with the script helpers they share
//! ([`page_helpers`]).

pub mod display_page;
pub mod displays;
pub mod endpoint;
pub mod error;
pub mod handlers;
pub mod io;
pub mod page_helpers;
pub mod router;
pub mod routes;
pub mod sandbox;
pub mod sandbox_staff;
pub mod staff_page;
