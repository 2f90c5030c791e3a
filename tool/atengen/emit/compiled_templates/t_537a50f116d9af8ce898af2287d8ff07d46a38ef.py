from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'structured_wrapper.cpp.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_fz = l_0_structured_class = l_0_structured_body = missing
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    pass
    l_0_fz = context.vars['fz'] = environment.get_template('functionalize_kernels.cpp.j2', 'structured_wrapper.cpp.j2')._get_default_module(context)
    context.exported_vars.discard('fz')
    def macro(l_1_s):
        t_2 = []
        if l_1_s is missing:
            l_1_s = undefined("parameter 's' was not provided", name='s')
        pass
        t_2.extend((
            'struct ',
            str(environment.getattr(l_1_s, 'class_name')),
            ' final : public ',
            str(environment.getattr(l_1_s, 'base_class')),
            ' {\n',
        ))
        if (environment.getattr(l_1_s, 'variant') != 'functional'):
            pass
            t_2.extend((
                '  ',
                str(environment.getattr(l_1_s, 'class_name')),
                '(',
            ))
            l_2_loop = missing
            for l_2_n, l_2_loop in LoopContext(environment.getattr(l_1_s, 'out_names'), undefined):
                _loop_vars = {}
                pass
                t_2.extend((
                    'at::Tensor& o',
                    str(environment.getattr(l_2_loop, 'index0')),
                    str((', ' if (not environment.getattr(l_2_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 8 in 'structured_wrapper.cpp.j2' evaluated to false and no else section was defined."))),
                ))
            l_2_loop = l_2_n = missing
            t_2.append(
                ')\n      : outputs_{',
            )
            l_2_loop = missing
            for l_2_n, l_2_loop in LoopContext(environment.getattr(l_1_s, 'out_names'), undefined):
                _loop_vars = {}
                pass
                t_2.extend((
                    'std::ref(o',
                    str(environment.getattr(l_2_loop, 'index0')),
                    ')',
                    str((', ' if (not environment.getattr(l_2_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 9 in 'structured_wrapper.cpp.j2' evaluated to false and no else section was defined."))),
                ))
            l_2_loop = l_2_n = missing
            t_2.append(
                '} {}\n',
            )
        for l_2_method in ['set_output_strided', 'set_output_raw_strided']:
            _loop_vars = {}
            pass
            t_2.extend((
                '  void ',
                str(l_2_method),
                '(int64_t output_idx, at::IntArrayRef sizes, at::IntArrayRef strides,\n      at::TensorOptions options) override {\n',
            ))
            if (environment.getattr(l_1_s, 'variant') == 'functional'):
                pass
                t_2.append(
                    '    outputs_[output_idx] = atengen::create_out(sizes, strides, options);\n',
                )
            else:
                pass
                t_2.append(
                    '    const auto& out = outputs_[output_idx].get();\n',
                )
                if (environment.getattr(l_1_s, 'variant') == 'inplace'):
                    pass
                    t_2.append(
                        '    atengen::check_inplace(out, sizes, options);\n',
                    )
                else:
                    pass
                    t_2.append(
                        '    atengen::resize_out(out, sizes, strides, options);\n',
                    )
                if (l_2_method == 'set_output_strided'):
                    pass
                    t_2.append(
                        '    auto maybe_proxy = atengen::maybe_create_proxy(out, sizes, strides, options);\n    if (C10_UNLIKELY(maybe_proxy.has_value())) {\n      proxy_outputs_[output_idx] = std::move(maybe_proxy).value();\n    }\n',
                    )
            if environment.getattr(l_1_s, 'calls_super_set_output'):
                pass
                t_2.extend((
                    '    // TensorIterator-based kernels record their outputs in the base class.\n    ',
                    str(environment.getattr(l_1_s, 'base_class')),
                    '::set_output_raw_strided(output_idx, sizes, strides, options);\n',
                ))
            t_2.append(
                '  }\n',
            )
        l_2_method = missing
        t_2.append(
            '  const at::Tensor& maybe_get_output(int64_t output_idx) override {\n',
        )
        if (environment.getattr(l_1_s, 'variant') == 'functional'):
            pass
            t_2.append(
                '    return *outputs_[output_idx];\n',
            )
        else:
            pass
            t_2.append(
                '    return proxy_outputs_[output_idx].has_value() ? *proxy_outputs_[output_idx]\n                                                  : outputs_[output_idx].get();\n',
            )
        t_2.append(
            '  }\n',
        )
        if (environment.getattr(l_1_s, 'variant') == 'functional'):
            pass
            t_2.extend((
                '  std::array<c10::ExclusivelyOwned<at::Tensor>, ',
                str(environment.getattr(l_1_s, 'num_outputs')),
                '> outputs_;\n',
            ))
        else:
            pass
            t_2.extend((
                '  std::array<std::reference_wrapper<at::Tensor>, ',
                str(environment.getattr(l_1_s, 'num_outputs')),
                '> outputs_;\n  std::array<std::optional<at::Tensor>, ',
                str(environment.getattr(l_1_s, 'num_outputs')),
                '> proxy_outputs_;\n',
            ))
        t_2.append(
            '};\n',
        )
        return concat(t_2)
    context.exported_vars.add('structured_class')
    context.vars['structured_class'] = l_0_structured_class = Macro(environment, macro, 'structured_class', ('s',), False, False, False, context.eval_ctx.autoescape)
    def macro(l_1_s):
        t_3 = []
        if l_1_s is missing:
            l_1_s = undefined("parameter 's' was not provided", name='s')
        pass
        t_3.extend((
            '  ',
            str(environment.getattr(l_1_s, 'class_name')),
            ' atg_op',
        ))
        if environment.getattr(l_1_s, 'out_names'):
            pass
            t_3.extend((
                '(',
                str(t_1(context.eval_ctx, environment.getattr(l_1_s, 'out_names'), ', ')),
                ')',
            ))
        t_3.append(
            ';\n',
        )
        if ((environment.getattr(l_1_s, 'mode') == 'impl') and environment.getattr(l_1_s, 'precomputed')):
            pass
            t_3.extend((
                '  auto atg_precompute = atg_op.meta(',
                str(t_1(context.eval_ctx, environment.getattr(l_1_s, 'meta_args'), ', ')),
                ');\n',
            ))
        else:
            pass
            t_3.extend((
                '  atg_op.meta(',
                str(t_1(context.eval_ctx, environment.getattr(l_1_s, 'meta_args'), ', ')),
                ');\n',
            ))
        if (environment.getattr(l_1_s, 'mode') == 'impl'):
            pass
            t_3.extend((
                '  atg_op.impl(',
                str(t_1(context.eval_ctx, environment.getattr(l_1_s, 'impl_args'), ', ')),
                ');\n',
            ))
        elif (environment.getattr(l_1_s, 'mode') == 'out_op'):
            pass
            if (not environment.getattr(environment.getattr(l_1_s, 'out_op'), 'aten_call')):
                pass
                t_3.extend((
                    '  ',
                    str(context.call(environment.getattr((undefined(name='fz') if l_0_fz is missing else l_0_fz), 'find'), 'atg_out_op', environment.getattr(l_1_s, 'out_op'))),
                    '\n',
                ))
            t_3.extend((
                '  ',
                str(context.call(environment.getattr((undefined(name='fz') if l_0_fz is missing else l_0_fz), 'callee'), 'atg_out_op', environment.getattr(l_1_s, 'out_op'))),
                '(',
                str(t_1(context.eval_ctx, environment.getattr(l_1_s, 'impl_args'), ', ')),
                ');\n',
            ))
        if (environment.getattr(l_1_s, 'variant') != 'functional'):
            pass
            l_2_loop = missing
            for l_2_n, l_2_loop in LoopContext(environment.getattr(l_1_s, 'out_names'), undefined):
                _loop_vars = {}
                pass
                t_3.extend((
                    '  if (atg_op.proxy_outputs_[',
                    str(environment.getattr(l_2_loop, 'index0')),
                    '].has_value()) {\n    atg_op.outputs_[',
                    str(environment.getattr(l_2_loop, 'index0')),
                    '].get().copy_(*atg_op.proxy_outputs_[',
                    str(environment.getattr(l_2_loop, 'index0')),
                    ']);\n  }\n',
                ))
            l_2_loop = l_2_n = missing
        t_3.extend((
            '  return ',
            str(environment.getattr(l_1_s, 'return_expr')),
            ';\n',
        ))
        return concat(t_3)
    context.exported_vars.add('structured_body')
    context.vars['structured_body'] = l_0_structured_body = Macro(environment, macro, 'structured_body', ('s',), False, False, False, context.eval_ctx.autoescape)

blocks = {}
debug_info = '4=18&5=20&6=27&7=32&8=36&9=53&11=66&12=71&14=74&18=84&23=94&30=99&32=103&37=113&44=126&45=130&47=137&48=139&52=148&53=155&54=168&55=172&57=179&59=182&60=186&61=189&62=191&63=195&65=200&67=205&68=208&69=213&70=215&74=223'
