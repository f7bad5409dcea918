"""The Lift IR: immutable nodes, the patterns, type inference and printing."""

from liftkit.ir.nodes import (
    Expr,
    FunCall,
    FunDecl,
    Lambda,
    Literal,
    Node,
    Param,
    UserFun,
    alpha_equal,
    as_expr,
    children,
    compose,
    free_params,
    lit,
    user_fun,
    walk,
)

__all__ = [
    "Expr", "FunCall", "FunDecl", "Lambda", "Literal", "Node", "Param", "UserFun", "alpha_equal",
    "as_expr", "children", "compose", "free_params", "lit", "user_fun", "walk",
]
