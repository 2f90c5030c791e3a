from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'structured_meta_class.h.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_class_name = resolve('class_name')
    l_0_base = resolve('base')
    l_0_elements = resolve('elements')
    l_0_flags = resolve('flags')
    l_0_params = resolve('params')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    pass
    yield 'struct '
    yield str((undefined(name='class_name') if l_0_class_name is missing else l_0_class_name))
    yield ' : public '
    yield str((undefined(name='base') if l_0_base is missing else l_0_base))
    yield ' {\n'
    if (undefined(name='elements') if l_0_elements is missing else l_0_elements):
        pass
        yield '  // meta() returns the values impl() takes instead of (or besides) its arguments; each\n  // set_<value>() returns a copy with that value set, and a value can be set only once.\n  template <'
        l_1_loop = missing
        for l_1_flag, l_1_loop in LoopContext((undefined(name='flags') if l_0_flags is missing else l_0_flags), undefined):
            _loop_vars = {}
            pass
            yield 'bool '
            yield str(l_1_flag)
            yield ' = false'
            yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 5 in 'structured_meta_class.h.j2' evaluated to false and no else section was defined.")))
        l_1_loop = l_1_flag = missing
        yield '>\n  struct precompute_out {\n'
        l_1_loop = missing
        for (l_1_type, l_1_elem), l_1_loop in LoopContext((undefined(name='elements') if l_0_elements is missing else l_0_elements), undefined):
            l_1_i = missing
            _loop_vars = {}
            pass
            l_1_i = environment.getattr(l_1_loop, 'index0')
            _loop_vars['i'] = l_1_i
            yield '    precompute_out<'
            l_2_loop = missing
            for l_2_flag, l_2_loop in LoopContext((undefined(name='flags') if l_0_flags is missing else l_0_flags), undefined):
                _loop_vars = {}
                pass
                yield str(('true' if (environment.getattr(l_2_loop, 'index0') == (undefined(name='i') if l_1_i is missing else l_1_i)) else l_2_flag))
                yield str((', ' if (not environment.getattr(l_2_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 9 in 'structured_meta_class.h.j2' evaluated to false and no else section was defined.")))
            l_2_loop = l_2_flag = missing
            yield '> set_'
            yield str(l_1_elem)
            yield '('
            yield str(l_1_type)
            yield ' value) {\n      static_assert('
            yield str(environment.getitem((undefined(name='flags') if l_0_flags is missing else l_0_flags), (undefined(name='i') if l_1_i is missing else l_1_i)))
            yield ' == false, "'
            yield str(l_1_elem)
            yield ' already set");\n      precompute_out<'
            l_2_loop = missing
            for l_2_flag, l_2_loop in LoopContext((undefined(name='flags') if l_0_flags is missing else l_0_flags), undefined):
                _loop_vars = {}
                pass
                yield str(('true' if (environment.getattr(l_2_loop, 'index0') == (undefined(name='i') if l_1_i is missing else l_1_i)) else l_2_flag))
                yield str((', ' if (not environment.getattr(l_2_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 11 in 'structured_meta_class.h.j2' evaluated to false and no else section was defined.")))
            l_2_loop = l_2_flag = missing
            yield '> ret;\n'
            l_2_loop = missing
            for (l_2__, l_2_other), l_2_loop in LoopContext((undefined(name='elements') if l_0_elements is missing else l_0_elements), undefined):
                _loop_vars = {}
                pass
                yield '      ret.'
                yield str(l_2_other)
                yield ' = '
                yield str(('value' if (environment.getattr(l_2_loop, 'index0') == (undefined(name='i') if l_1_i is missing else l_1_i)) else str_join(('this->', l_2_other, ))))
                yield ';\n'
            l_2_loop = l_2__ = l_2_other = missing
            yield '      return ret;\n    }\n'
        l_1_loop = l_1_type = l_1_elem = l_1_i = missing
        for (l_1_type, l_1_elem) in (undefined(name='elements') if l_0_elements is missing else l_0_elements):
            _loop_vars = {}
            pass
            yield '    '
            yield str(l_1_type)
            yield ' '
            yield str(l_1_elem)
            yield ';\n'
        l_1_type = l_1_elem = missing
        yield '  };\n  using meta_return_ty = precompute_out<'
        l_1_loop = missing
        for l_1_flag, l_1_loop in LoopContext((undefined(name='flags') if l_0_flags is missing else l_0_flags), undefined):
            _loop_vars = {}
            pass
            yield 'true'
            yield str((', ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 22 in 'structured_meta_class.h.j2' evaluated to false and no else section was defined.")))
        l_1_loop = l_1_flag = missing
        yield '>;\n  meta_return_ty meta('
        yield str(t_1(context.eval_ctx, (undefined(name='params') if l_0_params is missing else l_0_params), ', '))
        yield ');\n'
    else:
        pass
        yield '  void meta('
        yield str(t_1(context.eval_ctx, (undefined(name='params') if l_0_params is missing else l_0_params), ', '))
        yield ');\n'
    yield '}\n'

blocks = {}
debug_info = '1=23&2=27&5=31&7=41&8=45&9=49&10=60&11=65&12=73&13=77&18=84&19=88&22=95&23=102&25=107'
