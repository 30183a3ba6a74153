import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');

/** The kind of one exported symbol, as the report names it. */
function kindOf(checker: ts.TypeChecker, symbol: ts.Symbol): string {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const f = target.flags;
  const typeOnly = (symbol.declarations ?? []).some(
    (d) => ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly),
  );
  if (f & ts.SymbolFlags.Class) return typeOnly ? 'type (class)' : 'class';
  if (f & ts.SymbolFlags.Function) return 'function';
  if (f & ts.SymbolFlags.Variable) return 'const';
  if (f & ts.SymbolFlags.Interface) return 'interface';
  if (f & ts.SymbolFlags.TypeAlias) return 'type';
  if (f & ts.SymbolFlags.Enum) return 'enum';
  return 'other';
}

/**
 * The public API of the built package: every entry point of package.json `exports`, each export
 * with its kind, read from the declaration files in dist/ (build first). Checked in as
 * docs/api.md, so that every change to the list is a deliberate one (`npm run docs:api`).
 */
export function apiReport(): string {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, { types: string }>;
  };
  const entries = Object.entries(pkg.exports).map(([path, e]) => ({
    name: path === '.' ? pkg.name : `${pkg.name}/${path.slice(2)}`,
    file: join(root, e.types),
  }));
  const program = ts.createProgram(
    entries.map((e) => e.file),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      noEmit: true,
    },
  );
  const checker = program.getTypeChecker();
  const lines = [
    '# Public API',
    '',
    'Every export of each entry point of the package, generated from the built declarations by `npm run docs:api`',
    '(a test compares it with the build: a change to the public API changes this file too).',
    '',
  ];
  for (const entry of entries) {
    const source = program.getSourceFile(entry.file);
    if (!source) throw new Error(`${entry.file} is missing: run npm run build first`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    const exports = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
    lines.push(`## ${entry.name}`, '');
    for (const symbol of [...exports].sort((a, b) => a.name.localeCompare(b.name)))
      lines.push(`- \`${symbol.name}\` ${kindOf(checker, symbol)}`);
    lines.push('');
  }
  return lines.join('\n');
}
