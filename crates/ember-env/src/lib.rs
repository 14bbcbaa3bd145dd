//! # ember-env
//!
//! Gymnasium-exact classic-control environments (work in progress).

#![warn(missing_docs)]
