//! MySQL compatibility: how statements, expressions, functions, types, variables and the
//! SHOW/DESCRIBE/information_schema answers tools rely on are made to mean what MySQL means.

pub(crate) mod checked_arithmetic;
pub(crate) mod column_names;
pub(crate) mod connection_statements;
pub(crate) mod describe;
pub(crate) mod expressions;
pub(crate) mod functions;
pub(crate) mod having_aliases;
pub(crate) mod information_schema;
pub(crate) mod lax_group_by;
pub(crate) mod nested_names;
pub(crate) mod rewrites;
pub(crate) mod script;
pub(crate) mod session_functions;
pub(crate) mod set_variable;
pub(crate) mod show;
pub(crate) mod show_create;
pub(crate) mod show_filter;
pub(crate) mod sleep;
pub(crate) mod string_results;
pub(crate) mod system_variables;
pub(crate) mod tokens;
pub(crate) mod types;
pub(crate) mod user_variables;
pub(crate) mod write_order;
