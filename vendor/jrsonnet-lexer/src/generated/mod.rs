pub mod syntax_kinds;
