import isNumber from 'is-number';

console.log(`hello from the box: isNumber(42) = ${isNumber(42)}, uid = ${process.getuid()}`);
