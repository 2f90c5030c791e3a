from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'pch.cpp.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_preamble = missing
    pass
    def macro(l_1_kind):
        t_1 = []
        if l_1_kind is missing:
            l_1_kind = undefined("parameter 'kind' was not provided", name='kind')
        pass
        t_1.extend((
            '#ifdef ATENGEN_PCH_',
            str(l_1_kind),
            '\n#include ATENGEN_PCH_',
            str(l_1_kind),
            '\n#include ATENGEN_PCH_',
            str(l_1_kind),
            '_STAMP\n#endif',
        ))
        return concat(t_1)
    context.exported_vars.add('preamble')
    context.vars['preamble'] = l_0_preamble = Macro(environment, macro, 'preamble', ('kind',), False, False, False, context.eval_ctx.autoescape)

blocks = {}
debug_info = '8=12&9=19&10=21&11=23'
