const { Button } = require('./components/Button');
module.exports = Button;
